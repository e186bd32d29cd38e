// Package config reads Paddock's settings: defaults, then PADDOCK_*
// environment variables, then flags (applied by the CLI). It is the only
// place that reads the environment.
package config

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"mime"
	"net"
	"net/netip"
	"net/url"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
	"golang.org/x/term"

	"github.com/paddock-dev/paddock/internal/audit"
	"github.com/paddock-dev/paddock/internal/bound"
	"github.com/paddock-dev/paddock/internal/identity"
)

// Config is the process configuration.
type Config struct {
	DataDir string
	// DatabaseURL is the PostgreSQL database of the store (empty: a
	// SQLite file in DataDir).
	DatabaseURL string
	Listen      string
	// Background marks a server a client command started for itself: it
	// ends when unused, and paddock serve takes the data directory over.
	Background bool
	Server     string
	// Project is the project client commands use unless told another.
	Project         string
	TemporalAddress string
	// TemporalBroadcast is the address other nodes reach this node's
	// embedded Temporal services at (with DatabaseURL: a cluster).
	TemporalBroadcast string
	// Kubeconfig is where the Kubernetes controller's cluster is: a
	// kubeconfig file, or "in-cluster" (the pod's service account); empty:
	// no controller.
	Kubeconfig string
	// KubeUserPrefix is what Kubernetes user names carry before the
	// Paddock user's name.
	KubeUserPrefix string
	// KubeUsers maps Kubernetes users (service accounts among them) to
	// Paddock users, ahead of KubeUserPrefix.
	KubeUsers map[string]string
	// TemporalPort is the first of the nine consecutive ports the embedded
	// Temporal services listen on (0: free ports, chosen at each start).
	TemporalPort int
	LogLevel     slog.Level
	// LogFormat is "json" or "text" ("": JSON unless standard error is a
	// terminal).
	LogFormat string
	// MetricsListen is where /metrics and the profiles are served ("" or
	// "off": nowhere; Load's default is DefaultMetricsListen, which a
	// background server leaves); MetricsToken is the bearer token they
	// need, required beyond loopback. MetricsExplicit says the variable
	// was set.
	MetricsListen   string
	MetricsToken    string
	MetricsExplicit bool
	// TracesProtocol is how spans go to the OTLP endpoint OpenTelemetry's
	// own variables name ("grpc" or "http/protobuf"; "": no traces);
	// TracesRatio the share of traces kept (OTEL_TRACES_SAMPLER).
	TracesProtocol string
	TracesRatio    float64
	// AdminUser names the first administrator, created on first start.
	AdminUser string
	// Token is the API token client commands send (PADDOCK_TOKEN).
	Token string
	// OIDC is login through the organization's directory (empty Issuer:
	// API tokens only).
	OIDCIssuer, OIDCClientID, OIDCUsernameClaim string
	// PublicURL is the web app's address as people open it, for the
	// links Paddock posts in chat (empty: the server's own address).
	PublicURL string
	// AttachmentTypes are the media types messages' files may have beyond
	// images, PDF and text (archives).
	AttachmentTypes []string
	// SlackAPIURL is Slack's Web API (empty: slack.com's).
	SlackAPIURL string
	// TLSCert and TLSKey serve HTTPS; InsecureListen allows a plain-HTTP
	// listener beyond loopback (behind a proxy terminating TLS).
	TLSCert, TLSKey string
	InsecureListen  bool
	// Execution is where sandboxes run: "workstation" or "server".
	Execution string
	// Pods runs sandboxes as pods of the Kubernetes cluster of Kubeconfig
	// (with Execution "server"); nil: bubblewrap on this machine.
	Pods             *Pods
	CommandMax       time.Duration
	CommandMaxOutput int64
	// CommandMaxCPUs bounds the processor time of one command, in CPUs.
	CommandMaxCPUs float64
	// CommandMaxMemory and CommandMaxProcesses bound one command's memory
	// (bytes) and processes; 0: the sandbox's defaults.
	CommandMaxMemory    int64
	CommandMaxProcesses int
	// SessionMaxDisk bounds all a session writes (working copy, caches).
	SessionMaxDisk int64
	// SessionMaxFiles bounds the files a session's volume holds.
	SessionMaxFiles int64
	// Unenforced are limits the operator accepts running without where
	// this machine cannot enforce them ("disk", "cpu", "memory", "processes").
	Unenforced map[string]bool
	// ReadOnlyPaths are host paths commands see read-only besides the
	// default view (toolchains outside /usr).
	ReadOnlyPaths []string
	// RepositoryRoots confine sessions' repositories: project P's under
	// ROOT/P/ (empty: anywhere the server can read).
	RepositoryRoots []string
	// AuditCheckpointDir is where audit checkpoints are also published.
	AuditCheckpointDir string
	// AuditWitnesses cosign the audit checkpoints.
	AuditWitnesses []audit.Witness
	// EgressPermit are ranges commands allowed the network may reach
	// although they are documentation, benchmarking or this node's own
	// addresses.
	EgressPermit []netip.Prefix
	// TestingForgeLoopback lets Paddock's fetches reach a forge on
	// loopback: for tests, whose forges listen on 127.0.0.1; no variable
	// sets it.
	TestingForgeLoopback bool
	// RetainFailed is how long a failed session's working copy is kept.
	RetainFailed time.Duration
	// LayersMax bounds the environment layers kept (bytes).
	LayersMax int64
	// MirrorsMax bounds the remote repositories' mirrors kept (bytes).
	MirrorsMax int64
	// TriggerSecrets are the HMAC secrets of triggers, by PROJECT/NAME.
	TriggerSecrets map[string]string
	// Budget is the default session budget (agents may override it).
	Budget bound.Limits
	// Prices are USD per million tokens by model (PROVIDER/MODEL): the
	// built-in table (BuiltinPrices) overridden by PADDOCK_PRICES.
	Prices Prices
	// EncryptionKey is the base64 AES-256 key of content at rest (empty:
	// DATA_DIR/encryption.key, generated on first start).
	EncryptionKey string
}

// Pods shape sandboxes that run as pods (agent-sandbox Sandboxes).
type Pods struct {
	// Image has `paddock` on its PATH, bash and the commands' toolchains.
	Image string
	// Namespace holds the sandboxes.
	Namespace string
	// RuntimeClass of the pods: empty picks gVisor or Kata when the
	// cluster has one; "none" uses the default runtime.
	RuntimeClass string
	// WarmPool sandboxes wait ready to be claimed.
	WarmPool int
	// Idle is how long a sandbox stays up with no command.
	Idle time.Duration
	// StorageClass of the sessions' volumes (empty: the cluster's default).
	StorageClass string
	// Egress is the address (HOST:PORT) this node serves sandbox pods'
	// egress gateway on, HOST being where pods reach this node.
	Egress string
}

// Price is what a model costs, in USD per million tokens.
type Price struct {
	Input  float64 `yaml:"input"`
	Output float64 `yaml:"output"`
}

// Cost is the price of a call.
func (p Price) Cost(in, out int) float64 {
	return (float64(in)*p.Input + float64(out)*p.Output) / 1e6
}

// Prices are model prices by PROVIDER/MODEL.
type Prices map[string]Price

// Of is a model's price: its own entry, else the entry its dated or
// suffixed name extends ("anthropic/claude-sonnet-4-5-20250929" is priced
// as "anthropic/claude-sonnet-4-5"); zero for a model not listed.
func (p Prices) Of(model string) Price {
	if price, ok := p[model]; ok {
		return price
	}
	best := ""
	for name := range p {
		if strings.HasPrefix(model, name+"-") && len(name) > len(best) {
			best = name
		}
	}
	return p[best]
}

// PricesAsOf dates BuiltinPrices: the providers' published list prices
// (standard tier, no caching or batch discounts) as of then.
const PricesAsOf = "2025-11"

// BuiltinPrices are the list prices of the supported providers' current
// models, USD per million tokens, as of PricesAsOf; PADDOCK_PRICES
// overrides and extends them.
var BuiltinPrices = Prices{
	"anthropic/claude-opus-4-5":   {Input: 5, Output: 25},
	"anthropic/claude-opus-4-1":   {Input: 15, Output: 75},
	"anthropic/claude-opus-4":     {Input: 15, Output: 75},
	"anthropic/claude-sonnet-4-5": {Input: 3, Output: 15},
	"anthropic/claude-sonnet-4":   {Input: 3, Output: 15},
	"anthropic/claude-3-7-sonnet": {Input: 3, Output: 15},
	"anthropic/claude-haiku-4-5":  {Input: 1, Output: 5},
	"anthropic/claude-3-5-haiku":  {Input: 0.8, Output: 4},
	"openai/gpt-5":                {Input: 1.25, Output: 10},
	"openai/gpt-5-mini":           {Input: 0.25, Output: 2},
	"openai/gpt-5-nano":           {Input: 0.05, Output: 0.4},
	"openai/gpt-4.1":              {Input: 2, Output: 8},
	"openai/gpt-4.1-mini":         {Input: 0.4, Output: 1.6},
	"openai/gpt-4.1-nano":         {Input: 0.1, Output: 0.4},
	"openai/gpt-4o":               {Input: 2.5, Output: 10},
	"openai/gpt-4o-mini":          {Input: 0.15, Output: 0.6},
	"openai/o3":                   {Input: 2, Output: 8},
	"openai/o4-mini":              {Input: 1.1, Output: 4.4},
}

// DefaultSessionMaxDisk is a session's disk budget unless configured.
const DefaultSessionMaxDisk = 10 << 30

// DefaultSessionMaxFiles is a session's file budget unless configured.
const DefaultSessionMaxFiles = 250000

// DefaultBudget is a session's budget unless configured.
func DefaultBudget() bound.Limits {
	return bound.Limits{Actions: bound.DefaultActions, Active: bound.DefaultActive, Extensions: bound.DefaultExtensions,
		Grant: bound.DefaultGrant, Lifetime: bound.DefaultLifetime}
}

// DefaultLayersMax bounds the environment layers kept unless configured;
// DefaultMirrorsMax the mirrors.
const (
	DefaultLayersMax  = 20 << 30
	DefaultMirrorsMax = 20 << 30
)

// Execution places.
const (
	ExecutionWorkstation = "workstation"
	ExecutionServer      = "server"
)

// ExecutorCA is the PEM authority whose client certificates a sandbox
// pod's executor (paddock kube executor) trusts. The executor loads no
// other configuration: a pod has no data directory.
func ExecutorCA(getenv func(string) string) string {
	return getenv("PADDOCK_EXECUTOR_CA")
}

// DefaultMetricsListen is where paddock serve serves its metrics unless
// told otherwise.
const DefaultMetricsListen = "127.0.0.1:9464"

// Var documents one environment variable; the README table lists them all.
type Var struct {
	Name, Default, Meaning string
}

// Vars are every PADDOCK_* variable Paddock reads.
var Vars = []Var{
	{"PADDOCK_DATA_DIR", "~/.paddock (/var/lib/paddock as root)", "where the store, the embedded Temporal database and working copies live"},
	{"PADDOCK_DATABASE_URL", "(none: SQLite in DATA_DIR)", "postgres:// URL of the PostgreSQL database of the store (migrations applied at start, or by `paddock migrate`)"},
	{"PADDOCK_REPOSITORY_ROOTS", "(none: on one person's server any repository it can read; on a shared one only server administrators name repositories)", "colon-separated directories; a session of project P copies only repositories under ROOT/P/ (set it on a server several people use); the data directory is never a repository"},
	{"PADDOCK_LISTEN", "127.0.0.1:7470", "address `paddock serve` listens on (loopback unless told otherwise)"},
	{"PADDOCK_SERVER", "(none)", "URL of a running server for client commands; `run`/`demo` start an in-process server when unset"},
	{"PADDOCK_EXECUTOR_CA", "(none)", "in a sandbox pod, the PEM certificate authority of the Paddock workers' client certificates that `paddock kube executor` trusts (set by Paddock's SandboxTemplate)"},
	{"PADDOCK_PROJECT", "default", "the project client commands (`run`, `policy check|show|apply|replay`) use when `--project` is not given"},
	{"PADDOCK_TEMPORAL_ADDRESS", "(none: embedded)", "host:port of an external Temporal cluster instead of the embedded server"},
	{"PADDOCK_TEMPORAL_BROADCAST_ADDRESS", "127.0.0.1", "with PADDOCK_DATABASE_URL, the IP address other nodes reach this node's embedded Temporal services at (they listen on it); the default makes a cluster of nodes on one machine"},
	{"PADDOCK_TEMPORAL_PORT", "(none: free ports)", "the first of nine consecutive ports the embedded Temporal services listen on (frontend, membership, history, matching, worker, metrics), for a firewall between nodes; unset, free ports are chosen at each start"},
	{"PADDOCK_KUBECONFIG", "(none: no controller)", "a kubeconfig file, or `in-cluster`: run the Kubernetes controller of Agent and Session resources (`paddock kube crds` prints their definitions); one node at a time runs it (a Lease in the pod's namespace, or the kubeconfig context's)"},
	{"PADDOCK_KUBE_USERS", "(none)", "Kubernetes users the controller acts for as a Paddock user of another name, such as a CI job's service account: `system:serviceaccount:ci:deployer=ci-bot,alice@example.com=alice` (KUBERNETES_USER=PADDOCK_USER, comma-separated); these come before PADDOCK_KUBE_USER_PREFIX, and other `system:` users are refused"},
	{"PADDOCK_KUBE_USER_PREFIX", "(none)", "what the cluster's user names carry before the Paddock user's name (its OIDC prefix, such as `oidc:`): the controller acts for the Paddock user named as the Kubernetes user who created a Session or applied an Agent, less this prefix"},
	{"PADDOCK_LOG_LEVEL", "info", "debug, info, warn or error"},
	{"PADDOCK_LOG_FORMAT", "json (text on a terminal)", "json: one JSON object per line (`time`, `level`, `msg`, `request_id` and the record's own fields), for a log collector; text: key=value lines"},
	{"PADDOCK_METRICS_LISTEN", "127.0.0.1:9464 (a background server: off)", "address of the operators' listener: Prometheus metrics at `/metrics`, Go profiles under `/debug/pprof/`; `off` for none; beyond loopback it needs PADDOCK_METRICS_TOKEN"},
	{"PADDOCK_METRICS_TOKEN", "(none)", "bearer token the metrics listener requires (`Authorization: Bearer TOKEN`); required when PADDOCK_METRICS_LISTEN is not a loopback address"},
	{"PADDOCK_TOKEN", "(none)", "API token client commands send; otherwise the one `paddock login` saved for the server, else DATA_DIR/admin.token"},
	{"PADDOCK_ADMIN_USER", "the OS user name", "name of the first administrator, created on first start with a token in DATA_DIR/admin.token (mode 600)"},
	{"PADDOCK_OIDC_ISSUER", "(none: API tokens only)", "issuer URL of the organization's OpenID Connect directory, for `paddock login`"},
	{"PADDOCK_OIDC_CLIENT_ID", "(none)", "Paddock's client ID at the directory (a public client allowing loopback redirects)"},
	{"PADDOCK_OIDC_USERNAME_CLAIM", "preferred_username", "the ID token claim a user is named after on their first login"},
	{"PADDOCK_PUBLIC_URL", "(the server's own address)", "the web app's address as people open it (https://paddock.example.com): the links Paddock posts in Slack threads point there"},
	{"PADDOCK_ATTACHMENT_TYPES", "(none: images, PDF and UTF-8 text only)", "comma-separated media types messages' files may also have, by their sniffed content (application/zip, application/gzip): placed in the working copy, never given to the model"},
	{"PADDOCK_SLACK_API_URL", "https://slack.com/api/", "Slack's Web API, for a proxy in between (projects' Slack apps post through it)"},
	{"PADDOCK_TLS_CERT", "(none)", "PEM certificate file: serve HTTPS (with PADDOCK_TLS_KEY)"},
	{"PADDOCK_TLS_KEY", "(none)", "PEM private key file of PADDOCK_TLS_CERT"},
	{"PADDOCK_INSECURE_LISTEN", "false", "true allows plain HTTP on an address beyond loopback (only behind a proxy that terminates TLS)"},
	{"PADDOCK_EXECUTION", "workstation", "where sandboxes run: workstation (beside paddock run) or server (the execution host)"},
	{"PADDOCK_POD_IMAGE", "(none: bubblewrap on the node)", "with PADDOCK_EXECUTION=server and PADDOCK_KUBECONFIG, run each session's sandbox as a pod of this image (`paddock` on its PATH, bash and the toolchains), an agent-sandbox Sandbox claimed from a template Paddock installs"},
	{"PADDOCK_POD_NAMESPACE", "paddock-sandboxes", "the namespace of the sandbox pods, their template, warm pool and network policy"},
	{"PADDOCK_POD_RUNTIME_CLASS", "(auto: gVisor, else Kata, when the cluster has one)", "the sandbox pods' RuntimeClass; `none` for the cluster's default runtime"},
	{"PADDOCK_POD_WARM_POOL", "1", "sandbox pods kept ready to be claimed, so a session's first command starts at once"},
	{"PADDOCK_POD_IDLE", "15m", "how long a sandbox pod stays up with no command before it is suspended (pod gone, volume kept); the next command resumes it"},
	{"PADDOCK_POD_STORAGE_CLASS", "(the cluster's default)", "StorageClass of the sandbox pods' volumes (the working copy and build cache)"},
	{"PADDOCK_POD_EGRESS_ADDRESS", "(PADDOCK_TEMPORAL_BROADCAST_ADDRESS):7444", "HOST:PORT this node serves sandbox pods' egress gateway on: HOST is the IP address where the pods reach this node (not a name, never a loopback address), and the pods' network policy allows them that port alone; the commands of agents allowed network reach their egress proxy through it"},
	{"PADDOCK_AUDIT_CHECKPOINT_DIR", "(none: checkpoints are kept in the database only)", "directory where a signed checkpoint of the audit tree is published at every seal and every 10 minutes (checkpoint-SIZE, never overwritten); put it out of this server's reach (another machine's mount, write-once storage) and `paddock audit verify` catches a history rewritten in the database"},
	{"PADDOCK_AUDIT_WITNESSES", "(none)", "comma-separated URL=VERIFIER-KEY of C2SP witnesses (c2sp.org/tlog-witness) that cosign every audit checkpoint published, once they have checked the log only grew since the last one they cosigned; a witness refusing means the history it saw was rewritten"},
	{"PADDOCK_EGRESS_PERMIT", "(none)", "comma-separated CIDR ranges the egress proxy may dial although they are documentation (192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24, 2001:db8::/32), benchmarking (198.18.0.0/15) or this node's own addresses, which it otherwise refuses; loopback, private, link-local and metadata addresses stay refused"},
	{"PADDOCK_COMMAND_MAX_SECONDS", "600", "longest a sandboxed command may run"},
	{"PADDOCK_COMMAND_MAX_OUTPUT_BYTES", "10485760", "most output kept from a command; the rest is counted and discarded"},
	{"PADDOCK_COMMAND_MAX_CPUS", "1", "processor time one command may use, in CPUs (fractions allowed: 0.5)"},
	{"PADDOCK_COMMAND_MAX_MEMORY_BYTES", "4294967296", "memory one command may use (its processes together); past it the kernel kills the largest"},
	{"PADDOCK_COMMAND_MAX_PROCESSES", "512", "processes and threads one command may have at once; past it a fork fails"},
	{"PADDOCK_SESSION_MAX_DISK_BYTES", "10737418240", "most a session's commands may write in all (working copy, caches), enforced by the kernel"},
	{"PADDOCK_SESSION_MAX_FILES", "250000", "most files a session's working copy and caches may hold in all, enforced by the kernel with the disk budget (a volume has one file per 4 KiB of it at most): the host records the copy after every call, and that work grows with its files"},
	{"PADDOCK_UNENFORCED_LIMITS", "(none)", "comma-separated limits (`disk`, `cpu`, `memory`, `processes`) the operator accepts unenforced where this machine cannot enforce them; otherwise sessions that run commands refuse to start"},
	{"PADDOCK_SANDBOX_READ_ONLY_PATHS", "(none)", "colon-separated absolute host paths commands see read-only besides /usr, /etc and the libraries (toolchains elsewhere, e.g. /opt/sdk)"},
	{"PADDOCK_LAYERS_MAX_BYTES", "21474836480", "most disk environment layers (what setup scripts leave) may take; the least recently used unused ones go first"},
	{"PADDOCK_MIRRORS_MAX_BYTES", "21474836480", "most disk remote repositories' mirrors may take; past it the hourly collection removes the least recently used no live session names"},
	{"PADDOCK_SESSION_MAX_ACTIONS", "150", "a session's action budget (each tool call and each compaction is one); an agent's session.maxActions overrides it"},
	{"PADDOCK_SESSION_MAX_MINUTES", "45", "a session's active-time budget in minutes (time parked on a person or idle does not count); session.maxMinutes overrides it"},
	{"PADDOCK_SESSION_MAX_EXTENSIONS", "5", "extensions a person may grant a session whose budget ran out, each +50 actions and +15 minutes; session.maxExtensions overrides it"},
	{"PADDOCK_SESSION_MAX_LIFETIME", "168h", "a session's hard wall-clock expiry, counted from its creation, asleep or not; session.maxLifetime overrides it"},
	{"PADDOCK_RETAIN_FAILED", "168h", "how long a failed session's working copy is kept for inspection before it is collected (stopped sessions' go at once); `paddock gc` collects now"},
	{"PADDOCK_TRIGGER_SECRETS", "(none: triggers refuse deliveries)", "YAML file (mode 600) of the HMAC-SHA256 secrets of triggers, `PROJECT/NAME: SECRET` (16 characters or more; `whsec_BASE64` for Standard Webhooks senders); a delivery to /v1/projects/PROJECT/triggers/NAME must be signed with it"},
	{"PADDOCK_ENCRYPTION_KEY", "(none: DATA_DIR/encryption.key, generated)", "base64 of 32 random bytes: the AES-256-GCM key of content at rest (workflow history, retained audit content)"},
	{"PADDOCK_PRICES", "(the built-in list prices)", "YAML file of model prices, USD per million tokens, overriding and extending the built-in table of the supported providers' list prices: `anthropic/claude-sonnet-4-5: {input: 3, output: 15}`"},
}

// Load reads the environment through getenv (os.Getenv in production).
func Load(getenv func(string) string) (Config, error) {
	c := Config{
		DataDir:           getenv("PADDOCK_DATA_DIR"),
		DatabaseURL:       getenv("PADDOCK_DATABASE_URL"),
		Listen:            getenv("PADDOCK_LISTEN"),
		Server:            getenv("PADDOCK_SERVER"),
		Project:           cmp.Or(getenv("PADDOCK_PROJECT"), "default"),
		TemporalAddress:   getenv("PADDOCK_TEMPORAL_ADDRESS"),
		TemporalBroadcast: getenv("PADDOCK_TEMPORAL_BROADCAST_ADDRESS"),
		Kubeconfig:        getenv("PADDOCK_KUBECONFIG"),
		KubeUserPrefix:    getenv("PADDOCK_KUBE_USER_PREFIX"),
		AdminUser:         getenv("PADDOCK_ADMIN_USER"),
		Token:             getenv("PADDOCK_TOKEN"),
		TLSCert:           getenv("PADDOCK_TLS_CERT"),
		TLSKey:            getenv("PADDOCK_TLS_KEY"),
		OIDCIssuer:        getenv("PADDOCK_OIDC_ISSUER"),
		OIDCClientID:      getenv("PADDOCK_OIDC_CLIENT_ID"),
		OIDCUsernameClaim: getenv("PADDOCK_OIDC_USERNAME_CLAIM"),
		PublicURL:         getenv("PADDOCK_PUBLIC_URL"),
		SlackAPIURL:       getenv("PADDOCK_SLACK_API_URL"),
		EncryptionKey:     getenv("PADDOCK_ENCRYPTION_KEY"),
	}
	if c.DataDir == "" && os.Getuid() == 0 {
		// Root's home is private, and the sandbox user must reach the working copies.
		c.DataDir = "/var/lib/paddock"
	}
	if c.DataDir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return c, fmt.Errorf("PADDOCK_DATA_DIR is unset and the home directory is unknown: %w", err)
		}
		c.DataDir = filepath.Join(home, ".paddock")
	}
	switch c.Execution = getenv("PADDOCK_EXECUTION"); c.Execution {
	case "":
		c.Execution = ExecutionWorkstation
	case ExecutionWorkstation, ExecutionServer:
	default:
		return c, fmt.Errorf("PADDOCK_EXECUTION=%q: want workstation or server", c.Execution)
	}
	if img := getenv("PADDOCK_POD_IMAGE"); img != "" {
		if c.Execution != ExecutionServer || c.Kubeconfig == "" {
			return c, fmt.Errorf("PADDOCK_POD_IMAGE=%q: sandbox pods need PADDOCK_EXECUTION=server and PADDOCK_KUBECONFIG (the cluster they run on)", img)
		}
		p := &Pods{Image: img, Namespace: cmp.Or(getenv("PADDOCK_POD_NAMESPACE"), "paddock-sandboxes"), RuntimeClass: getenv("PADDOCK_POD_RUNTIME_CLASS"),
			WarmPool: 1, Idle: 15 * time.Minute, StorageClass: getenv("PADDOCK_POD_STORAGE_CLASS"),
			Egress: getenv("PADDOCK_POD_EGRESS_ADDRESS")}
		if p.Egress == "" {
			if c.TemporalBroadcast == "" {
				return c, errors.New("sandbox pods reach this node's egress gateway at PADDOCK_POD_EGRESS_ADDRESS, by default PADDOCK_TEMPORAL_BROADCAST_ADDRESS:7444: set either to this node's pod IP")
			}
			p.Egress = net.JoinHostPort(c.TemporalBroadcast, "7444")
		}
		host, port, err := net.SplitHostPort(p.Egress)
		if err != nil || host == "" || !validPort(port) {
			return c, fmt.Errorf("PADDOCK_POD_EGRESS_ADDRESS=%q: want HOST:PORT, HOST being where sandbox pods reach this node (its pod IP)", p.Egress)
		}
		// An IP address, which pods reach: no name (it would resolve
		// elsewhere, or to this node's loopback).
		if ip, err := netip.ParseAddr(host); err != nil || ip.Zone() != "" || ip.Unmap().IsLoopback() || ip.Unmap().IsUnspecified() {
			return c, fmt.Errorf("the sandbox pods' egress gateway at %s: want this node's pod IP, which pods reach (not a name, a loopback or an unspecified address); set PADDOCK_POD_EGRESS_ADDRESS (or PADDOCK_TEMPORAL_BROADCAST_ADDRESS)", p.Egress)
		}
		if v := getenv("PADDOCK_POD_WARM_POOL"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 || n > 1000 {
				return c, fmt.Errorf("PADDOCK_POD_WARM_POOL=%q: want a whole number of pods from 0 to 1000", v)
			}
			p.WarmPool = n
		}
		if v := getenv("PADDOCK_POD_IDLE"); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil || d < time.Second {
				return c, fmt.Errorf("PADDOCK_POD_IDLE=%q: want a duration of at least 1s, such as 15m", v)
			}
			p.Idle = d
		}
		c.Pods = p
	} else {
		for _, v := range []string{"PADDOCK_POD_NAMESPACE", "PADDOCK_POD_RUNTIME_CLASS", "PADDOCK_POD_WARM_POOL", "PADDOCK_POD_IDLE", "PADDOCK_POD_STORAGE_CLASS", "PADDOCK_POD_EGRESS_ADDRESS"} {
			if getenv(v) != "" {
				return c, fmt.Errorf("%s is set but PADDOCK_POD_IMAGE is not: sandbox pods need an image", v)
			}
		}
	}
	if v := getenv("PADDOCK_KUBE_USERS"); v != "" {
		users, err := kubeUsers(v)
		if err != nil {
			return c, fmt.Errorf("PADDOCK_KUBE_USERS: %w", err)
		}
		c.KubeUsers = users
	}
	if v := getenv("PADDOCK_TEMPORAL_PORT"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 32767-8 {
			return c, fmt.Errorf("PADDOCK_TEMPORAL_PORT=%q: want a port from 1 to 32759 (it and the eight after it are used, and Temporal's PostgreSQL schema keeps a port below 32768)", v)
		}
		c.TemporalPort = n
	}
	c.CommandMax = 10 * time.Minute
	if v := getenv("PADDOCK_COMMAND_MAX_SECONDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return c, fmt.Errorf("PADDOCK_COMMAND_MAX_SECONDS=%q: want a whole number of seconds, at least 1", v)
		}
		c.CommandMax = time.Duration(n) * time.Second
	}
	c.Prices = maps.Clone(BuiltinPrices)
	if f := getenv("PADDOCK_PRICES"); f != "" {
		data, err := os.ReadFile(f)
		if err != nil {
			return c, fmt.Errorf("PADDOCK_PRICES: %w", err)
		}
		var own Prices
		dec := yaml.NewDecoder(bytes.NewReader(data))
		dec.KnownFields(true)
		if err := dec.Decode(&own); err != nil {
			return c, fmt.Errorf("PADDOCK_PRICES=%s: want MODEL: {input: USD per Mtok, output: USD per Mtok}: %w", f, err)
		}
		maps.Copy(c.Prices, own)
	}
	if f := getenv("PADDOCK_TRIGGER_SECRETS"); f != "" {
		fi, err := os.Stat(f)
		if err != nil {
			return c, fmt.Errorf("PADDOCK_TRIGGER_SECRETS: %w", err)
		}
		if fi.Mode().Perm()&0o077 != 0 {
			return c, fmt.Errorf("PADDOCK_TRIGGER_SECRETS=%s: the file is readable by others (mode %o); chmod 600 it", f, fi.Mode().Perm())
		}
		data, err := os.ReadFile(f)
		if err != nil {
			return c, fmt.Errorf("PADDOCK_TRIGGER_SECRETS: %w", err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(data))
		dec.KnownFields(true)
		if err := dec.Decode(&c.TriggerSecrets); err != nil {
			return c, fmt.Errorf("PADDOCK_TRIGGER_SECRETS=%s: want PROJECT/TRIGGER: SECRET lines: %w", f, err)
		}
		for ref, secret := range c.TriggerSecrets {
			if project, name, ok := strings.Cut(ref, "/"); !ok || project == "" || name == "" || strings.Contains(name, "/") {
				return c, fmt.Errorf("PADDOCK_TRIGGER_SECRETS=%s: %q: a trigger belongs to a project: write PROJECT/TRIGGER (default/%s for the default project)", f, ref, ref)
			}
			if len(secret) < 16 {
				return c, fmt.Errorf("PADDOCK_TRIGGER_SECRETS=%s: the secret of trigger %q is shorter than 16 characters", f, ref)
			}
			if b64, ok := strings.CutPrefix(secret, "whsec_"); ok {
				if key, err := base64.StdEncoding.DecodeString(b64); err != nil || len(key) < 16 {
					return c, fmt.Errorf("PADDOCK_TRIGGER_SECRETS=%s: the secret of trigger %q: a whsec_ secret is the base64 of at least 16 bytes", f, ref)
				}
			}
		}
	}
	c.CommandMaxOutput = 10 << 20
	if v := getenv("PADDOCK_COMMAND_MAX_OUTPUT_BYTES"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			return c, fmt.Errorf("PADDOCK_COMMAND_MAX_OUTPUT_BYTES=%q: want a whole number of bytes, at least 1", v)
		}
		c.CommandMaxOutput = n
	}
	c.CommandMaxCPUs = 1
	if v := getenv("PADDOCK_COMMAND_MAX_CPUS"); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || !(f >= 0.01 && f <= 1024) {
			return c, fmt.Errorf("PADDOCK_COMMAND_MAX_CPUS=%q: want a number of CPUs between 0.01 and 1024, such as 1 or 0.5", v)
		}
		c.CommandMaxCPUs = f
	}
	if v := getenv("PADDOCK_COMMAND_MAX_MEMORY_BYTES"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 16<<20 {
			return c, fmt.Errorf("PADDOCK_COMMAND_MAX_MEMORY_BYTES=%q: want a whole number of bytes, at least 16777216 (16 MiB)", v)
		}
		c.CommandMaxMemory = n
	}
	if v := getenv("PADDOCK_COMMAND_MAX_PROCESSES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 8 || n > 1<<20 {
			return c, fmt.Errorf("PADDOCK_COMMAND_MAX_PROCESSES=%q: want a whole number of processes from 8 to 1048576", v)
		}
		c.CommandMaxProcesses = n
	}
	c.SessionMaxDisk = DefaultSessionMaxDisk
	if v := getenv("PADDOCK_SESSION_MAX_DISK_BYTES"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 64<<20 {
			return c, fmt.Errorf("PADDOCK_SESSION_MAX_DISK_BYTES=%q: want a whole number of bytes, at least 67108864 (64 MiB)", v)
		}
		c.SessionMaxDisk = n
	}
	c.SessionMaxFiles = DefaultSessionMaxFiles
	if v := getenv("PADDOCK_SESSION_MAX_FILES"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1000 {
			return c, fmt.Errorf("PADDOCK_SESSION_MAX_FILES=%q: want a whole number of files, at least 1000", v)
		}
		c.SessionMaxFiles = n
	}
	c.Unenforced = map[string]bool{}
	if v := getenv("PADDOCK_UNENFORCED_LIMITS"); v != "" {
		for _, l := range strings.Split(v, ",") {
			switch l = strings.TrimSpace(l); l {
			case "disk", "cpu", "memory", "processes":
				c.Unenforced[l] = true
			default:
				return c, fmt.Errorf("PADDOCK_UNENFORCED_LIMITS=%q: %q is not a limit; want a comma-separated list of disk, cpu, memory and processes", v, l)
			}
		}
	}
	if v := getenv("PADDOCK_SANDBOX_READ_ONLY_PATHS"); v != "" {
		for _, p := range strings.Split(v, ":") {
			if !filepath.IsAbs(p) || filepath.Clean(p) == "/" {
				return c, fmt.Errorf("PADDOCK_SANDBOX_READ_ONLY_PATHS=%q: %q must be an absolute path other than /", v, p)
			}
			c.ReadOnlyPaths = append(c.ReadOnlyPaths, filepath.Clean(p))
		}
	}
	if v := getenv("PADDOCK_ATTACHMENT_TYPES"); v != "" {
		for _, t := range strings.Split(v, ",") {
			t = strings.ToLower(strings.TrimSpace(t))
			if mt, _, err := mime.ParseMediaType(t); err != nil || mt != t || !strings.Contains(t, "/") {
				return c, fmt.Errorf("PADDOCK_ATTACHMENT_TYPES=%q: %q is not a media type (application/zip)", v, t)
			}
			c.AttachmentTypes = append(c.AttachmentTypes, t)
		}
	}
	if v := getenv("PADDOCK_REPOSITORY_ROOTS"); v != "" {
		for _, p := range strings.Split(v, ":") {
			if !filepath.IsAbs(p) || filepath.Clean(p) == "/" {
				return c, fmt.Errorf("PADDOCK_REPOSITORY_ROOTS=%q: %q must be an absolute path other than /", v, p)
			}
			c.RepositoryRoots = append(c.RepositoryRoots, filepath.Clean(p))
		}
	}
	if v := getenv("PADDOCK_AUDIT_CHECKPOINT_DIR"); v != "" {
		if !filepath.IsAbs(v) {
			return c, fmt.Errorf("PADDOCK_AUDIT_CHECKPOINT_DIR=%q: want an absolute path", v)
		}
		c.AuditCheckpointDir = filepath.Clean(v)
	}
	if v := getenv("PADDOCK_AUDIT_WITNESSES"); v != "" {
		for _, spec := range strings.Split(v, ",") {
			w, err := audit.ParseWitness(strings.TrimSpace(spec))
			if err != nil {
				return c, fmt.Errorf("PADDOCK_AUDIT_WITNESSES: %w", err)
			}
			c.AuditWitnesses = append(c.AuditWitnesses, w)
		}
	}
	if v := getenv("PADDOCK_EGRESS_PERMIT"); v != "" {
		for _, r := range strings.Split(v, ",") {
			p, err := netip.ParsePrefix(strings.TrimSpace(r))
			if err != nil {
				return c, fmt.Errorf("PADDOCK_EGRESS_PERMIT=%q: %q: want a CIDR range (203.0.113.0/24, 2001:db8::/32)", v, r)
			}
			c.EgressPermit = append(c.EgressPermit, p.Masked())
		}
	}
	c.Budget = DefaultBudget()
	for _, v := range []struct {
		name, value, want string
		min, max          int
		set               func(int)
	}{
		{"PADDOCK_SESSION_MAX_ACTIONS", getenv("PADDOCK_SESSION_MAX_ACTIONS"), "a whole number of actions from 1 to 100000", 1, 100000, func(n int) { c.Budget.Actions = n }},
		{"PADDOCK_SESSION_MAX_MINUTES", getenv("PADDOCK_SESSION_MAX_MINUTES"), "a whole number of minutes from 1 to 100000", 1, 100000, func(n int) { c.Budget.Active = time.Duration(n) * time.Minute }},
		{"PADDOCK_SESSION_MAX_EXTENSIONS", getenv("PADDOCK_SESSION_MAX_EXTENSIONS"), "a whole number of extensions from 0 to 1000", 0, 1000, func(n int) { c.Budget.Extensions = n }},
	} {
		if s := v.value; s != "" {
			n, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil || n < v.min || n > v.max {
				return c, fmt.Errorf("%s=%q: want %s (an unreadable bound is never replaced by the default)", v.name, s, v.want)
			}
			v.set(n)
		}
	}
	if s := getenv("PADDOCK_SESSION_MAX_LIFETIME"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d < time.Minute {
			return c, fmt.Errorf("PADDOCK_SESSION_MAX_LIFETIME=%q: want a duration of at least 1m, such as 168h (an unreadable bound is never replaced by the default)", s)
		}
		c.Budget.Lifetime = d
	}
	c.LayersMax = DefaultLayersMax
	if v := getenv("PADDOCK_LAYERS_MAX_BYTES"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return c, fmt.Errorf("PADDOCK_LAYERS_MAX_BYTES=%q: want a whole number of bytes (0 keeps only the layers live sessions use)", v)
		}
		c.LayersMax = n
	}
	c.MirrorsMax = DefaultMirrorsMax
	if v := getenv("PADDOCK_MIRRORS_MAX_BYTES"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return c, fmt.Errorf("PADDOCK_MIRRORS_MAX_BYTES=%q: want a whole number of bytes (0 keeps only the mirrors live sessions use)", v)
		}
		c.MirrorsMax = n
	}
	c.RetainFailed = 7 * 24 * time.Hour
	if v := getenv("PADDOCK_RETAIN_FAILED"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return c, fmt.Errorf("PADDOCK_RETAIN_FAILED=%q: want a duration such as 168h or 30m", v)
		}
		c.RetainFailed = d
	}
	if c.Listen == "" {
		c.Listen = "127.0.0.1:7470"
	}
	if c.AdminUser == "" {
		c.AdminUser = "admin"
		if u, err := user.Current(); err == nil {
			if name, err := identity.UserFromClaim(u.Username); err == nil {
				c.AdminUser = name
			}
		}
	}
	switch v := getenv("PADDOCK_INSECURE_LISTEN"); v {
	case "", "false":
	case "true":
		c.InsecureListen = true
	default:
		return c, fmt.Errorf("PADDOCK_INSECURE_LISTEN=%q: want true or false", v)
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		return c, fmt.Errorf("PADDOCK_TLS_CERT and PADDOCK_TLS_KEY go together: set both or neither")
	}
	if c.DatabaseURL != "" && !strings.HasPrefix(c.DatabaseURL, "postgres://") && !strings.HasPrefix(c.DatabaseURL, "postgresql://") {
		return c, fmt.Errorf("PADDOCK_DATABASE_URL: want a postgres:// URL (unset it to keep the store in SQLite under PADDOCK_DATA_DIR)")
	}
	for name, v := range map[string]string{"PADDOCK_PUBLIC_URL": c.PublicURL, "PADDOCK_SLACK_API_URL": c.SlackAPIURL} {
		if u, err := url.Parse(v); v != "" && (err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "") {
			return c, fmt.Errorf("%s=%q: want an http(s):// address", name, v)
		}
	}
	if (c.OIDCIssuer == "") != (c.OIDCClientID == "") {
		return c, fmt.Errorf("PADDOCK_OIDC_ISSUER and PADDOCK_OIDC_CLIENT_ID go together: set both or neither")
	}
	switch c.LogFormat = getenv("PADDOCK_LOG_FORMAT"); c.LogFormat {
	case "", "json", "text":
	default:
		return c, fmt.Errorf("PADDOCK_LOG_FORMAT=%q: want json or text", c.LogFormat)
	}
	c.MetricsListen, c.MetricsToken = getenv("PADDOCK_METRICS_LISTEN"), getenv("PADDOCK_METRICS_TOKEN")
	c.MetricsExplicit = c.MetricsListen != ""
	if c.MetricsListen == "" {
		c.MetricsListen = DefaultMetricsListen
	}
	if c.MetricsListen != "" && c.MetricsListen != "off" {
		host, port, err := net.SplitHostPort(c.MetricsListen)
		if err != nil || !validPort(port) {
			return c, fmt.Errorf("PADDOCK_METRICS_LISTEN=%q: want HOST:PORT (127.0.0.1:9464) or off", c.MetricsListen)
		}
		if ip := net.ParseIP(host); c.MetricsToken == "" && host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return c, fmt.Errorf("PADDOCK_METRICS_LISTEN=%s is beyond loopback: set PADDOCK_METRICS_TOKEN (a long random string Prometheus sends as a bearer token), or listen on 127.0.0.1", c.MetricsListen)
		}
	}
	// OpenTelemetry's own variables: traces go to the OTLP endpoint they
	// name (the exporter reads the rest of them).
	switch exp := getenv("OTEL_TRACES_EXPORTER"); {
	case exp == "none":
	case exp == "otlp" || getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "":
		c.TracesProtocol = cmp.Or(getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"), getenv("OTEL_EXPORTER_OTLP_PROTOCOL"), "http/protobuf")
		if c.TracesProtocol != "grpc" && c.TracesProtocol != "http/protobuf" {
			return c, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=%q: Paddock sends traces over grpc or http/protobuf", c.TracesProtocol)
		}
	case exp != "":
		return c, fmt.Errorf("OTEL_TRACES_EXPORTER=%q: want otlp or none", exp)
	}
	c.TracesRatio = 1
	switch v := getenv("OTEL_TRACES_SAMPLER"); v {
	case "", "always_on", "parentbased_always_on":
	case "always_off", "parentbased_always_off":
		c.TracesRatio = 0
	case "traceidratio", "parentbased_traceidratio":
		if arg := getenv("OTEL_TRACES_SAMPLER_ARG"); arg != "" {
			r, err := strconv.ParseFloat(arg, 64)
			if err != nil || r < 0 || r > 1 {
				return c, fmt.Errorf("OTEL_TRACES_SAMPLER_ARG=%q: want the share of traces kept, from 0 to 1", arg)
			}
			c.TracesRatio = r
		}
	default:
		return c, fmt.Errorf("OTEL_TRACES_SAMPLER=%q: want always_on, always_off, traceidratio or their parentbased_ forms", v)
	}
	switch lvl := strings.ToLower(getenv("PADDOCK_LOG_LEVEL")); lvl {
	case "", "info":
		c.LogLevel = slog.LevelInfo
	case "debug":
		c.LogLevel = slog.LevelDebug
	case "warn", "warning":
		c.LogLevel = slog.LevelWarn
	case "error":
		c.LogLevel = slog.LevelError
	default:
		return c, fmt.Errorf("PADDOCK_LOG_LEVEL=%q: want debug, info, warn or error", lvl)
	}
	return c, nil
}

// Logger writes w the log at LogLevel: JSON lines, or text ones where
// LogFormat says so or, by default, when w is a terminal.
func (c Config) Logger(w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: c.LogLevel}
	if f, ok := w.(*os.File); c.LogFormat == "text" || c.LogFormat == "" && ok && term.IsTerminal(int(f.Fd())) {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

// validPort says whether s is a TCP port (0: any free one).
func validPort(s string) bool {
	n, err := strconv.Atoi(s)
	return err == nil && n >= 0 && n <= 65535
}

// kubeUsers reads KUBERNETES_USER=PADDOCK_USER pairs, comma-separated.
func kubeUsers(v string) (map[string]string, error) {
	m := map[string]string{}
	for _, item := range strings.Split(v, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		k, p, ok := strings.Cut(item, "=")
		k, p = strings.TrimSpace(k), strings.TrimSpace(p)
		if !ok || k == "" || p == "" {
			return nil, fmt.Errorf("%q: want KUBERNETES_USER=PADDOCK_USER, such as system:serviceaccount:ci:deployer=ci-bot", item)
		}
		if _, dup := m[k]; dup {
			return nil, fmt.Errorf("Kubernetes user %s is mapped twice", k)
		}
		m[k] = p
	}
	return m, nil
}

// StoreDSN is where the store is: PADDOCK_DATABASE_URL, else the SQLite
// file in the data directory.
func (c Config) StoreDSN() string {
	if c.DatabaseURL != "" {
		return c.DatabaseURL
	}
	return filepath.Join(c.DataDir, "paddock.db")
}
