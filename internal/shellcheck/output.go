package shellcheck

import (
	"path"
	"strings"
)

// outputOptions are the options through which programs write a file or
// into a directory named by their value: a device or a system file there
// is refused, as a redirection to it is.
var outputOptions = map[string][]string{
	"sort":     {"-o", "--output", "-T", "--temporary-directory"},
	"git":      {"--output", "--output-directory"},
	"go":       {"-o", "-coverprofile", "-cpuprofile", "-memprofile", "-blockprofile", "-mutexprofile", "-trace", "-outputdir", "-modfile"},
	"cp":       {"-t", "--target-directory"},
	"mv":       {"-t", "--target-directory"},
	"ln":       {"-t", "--target-directory"},
	"install":  {"-t", "--target-directory"},
	"tar":      {"-C", "--directory", "--index-file"},
	"bsdtar":   {"-C", "--directory"},
	"unzip":    {"-d"},
	"7z":       {"-o"},
	"curl":     {"-o", "--output", "--output-dir", "-D", "--dump-header", "-c", "--cookie-jar", "--trace", "--trace-ascii", "--stderr", "--libcurl", "--etag-save", "--hsts", "--alt-svc"},
	"wget":     {"-O", "--output-document", "-o", "--output-file", "-a", "--append-output", "-P", "--directory-prefix", "--save-cookies"},
	"strace":   {"-o", "--output"},
	"ltrace":   {"-o", "--output"},
	"time":     {"-o", "--output"},
	"tree":     {"-o"},
	"gcc":      {"-o"},
	"cc":       {"-o"},
	"clang":    {"-o"},
	"ld":       {"-o"},
	"patch":    {"-o", "--output", "-d", "--directory"},
	"zip":      {"-O", "--output-file"},
	"openssl":  {"-out"},
	"rsync":    {"--log-file", "--write-batch", "--only-write-batch", "--backup-dir", "--partial-dir", "--temp-dir", "-T"},
	"cpio":     {"-D", "--directory", "-O", "--file", "-F"},
	"mktemp":   {"-p", "--tmpdir"},
	"gpg":      {"-o", "--output"},
	"pandoc":   {"-o", "--output"},
	"javac":    {"-d"},
	"npm":      {"--prefix"},
	"pip":      {"--target", "-t", "--root", "--prefix"},
	"pip3":     {"--target", "-t", "--root", "--prefix"},
	"cargo":    {"--target-dir", "--out-dir", "--artifact-dir"},
	"make":     {"-C", "--directory"},
	"ssh":      {"-E"},
	"truncate": {"-r", "--reference"},
}

// optionValues are the values a command's words give an option: -o F,
// -oF, --output F, --output=F, and a short option at the end of a
// cluster (-ro F).
func optionValues(args []arg, names []string) []arg {
	var out []arg
	for i := 1; i < len(args); i++ {
		a := args[i]
		if a.s == "--" {
			break
		}
		for _, n := range names {
			switch {
			case a.s == n:
				if i+1 < len(args) {
					out = append(out, args[i+1])
				}
			case strings.HasPrefix(n, "--") || len(n) > 2:
				if v, ok := strings.CutPrefix(a.s, n+"="); ok {
					out = append(out, withValue(a, v))
				} else if name, v, eq := strings.Cut(a.s, "="); strings.HasPrefix(n, "--") && longAbbrev(name, n) {
					// --outp=F, --direc F: GNU's abbreviations.
					if eq {
						out = append(out, withValue(a, v))
					} else if i+1 < len(args) {
						out = append(out, args[i+1])
					}
				}
			case strings.HasPrefix(a.s, "-") && !strings.HasPrefix(a.s, "--"):
				if j := strings.IndexByte(a.s[1:], n[1]); j >= 0 {
					if v := a.s[j+2:]; v != "" {
						out = append(out, withValue(a, strings.TrimPrefix(v, "=")))
					} else if i+1 < len(args) {
						out = append(out, args[i+1])
					}
				}
			}
		}
	}
	return out
}

// treeOutputs: tree gives each value-taking letter of a cluster the next
// word in turn (-Io x F: -I x, -o F).
func treeOutputs(args []arg) []arg {
	var out []arg
	for i := 1; i < len(args); i++ {
		s := args[i].s
		if !strings.HasPrefix(s, "-") || strings.HasPrefix(s, "--") {
			continue
		}
		next := i
		for _, ch := range s[1:] {
			if strings.ContainsRune("LPIHTo", ch) {
				next++
				if ch == 'o' && next < len(args) {
					out = append(out, args[next])
				}
			}
		}
		i = next
	}
	return out
}

// withValue is a word cut to the value after its option.
func withValue(a arg, v string) arg {
	cut := len(a.s) - len(v)
	a.s = v
	if len(a.prefix) >= cut {
		a.prefix = a.prefix[cut:]
	} else {
		a.prefix = ""
	}
	a.tmpl, a.def, a.param = nil, nil, ""
	return a
}

// candidates are the paths a word may name: itself, the values the
// command gives its variables (x=/etc; > $x/passwd), and, for a relative
// path, the same joined to each directory the command cd's to.
func (c *checker) candidates(a arg) []arg {
	out := []arg{a}
	for _, alt := range c.alternatives(a) {
		out = append(out, static([]string{alt})...)
	}
	for _, d := range a.def {
		out = append(out, static([]string{d})...)
	}
	for _, x := range append([]arg(nil), out...) {
		if !x.static || strings.HasPrefix(x.s, "/") || x.home || strings.HasPrefix(x.s, "~") {
			continue
		}
		for _, d := range c.dirs {
			if strings.HasPrefix(d, "/") {
				out = append(out, static([]string{path.Join(d, x.s)})...)
			}
		}
	}
	return out
}

// writeTarget refuses a path a program writes that is, or may be, a
// device (other than the harmless sinks) or a system file.
func (c *checker) writeTarget(what string, a arg) (verdict, bool) {
	for _, t := range c.candidates(a) {
		if v, ok := writeTarget(what, t); ok {
			return v, true
		}
	}
	return verdict{}, false
}

// writeTarget judges one path, as far as it is known.
func writeTarget(what string, t arg) (verdict, bool) {
	s := t.s
	if !t.static {
		s = t.prefix
	}
	if _, ok := descriptor(s); ok && t.static {
		return verdict{}, false // judged by what the descriptor points at (throughDescriptor)
	}
	cl := clean(s)
	dev, harmless := devicePath(s)
	gdev, gsys := globTarget(t.s)
	switch {
	case t.glob && (gdev || gsys):
		return refuse("device-write", what+" writes what the pattern "+t.s+" names, which can be a device or a system file"), true
	case dev && !harmless && (t.static || len(cl) > len("/dev/")):
		return refuse("device-write", what+" writes to the device "+t.s), true
	case t.static && strings.HasPrefix(cl, "/") && (cl == "/" || systemPath(cl)) && !dev:
		return refuse("system-file", what+" writes the system file or directory "+t.s), true
	case !t.static && strings.HasPrefix(t.prefix, "/") && strings.Contains(t.prefix[1:], "/") && systemPath(t.prefix) && !strings.HasPrefix(cl, "/dev/fd"):
		return refuse("system-file", what+" writes under "+t.prefix+", a system tree, to a name computed at run time"), true
	case !t.static && strings.HasPrefix(t.prefix, "/dev/") && !strings.HasPrefix(cl, "/dev/fd"):
		if _, ok := descriptor(t.prefix + "x"); !ok {
			return refuse("device-write", what+" writes under /dev/ to a name computed at run time"), true
		}
	case t.static && windowsSystem(s):
		return refuse("system-file", what+" writes the system directory "+t.s), true
	}
	return verdict{}, false
}

// programOutputs refuses a program whose output options write a device
// or a system file.
func (c *checker) programOutputs(n string, args []arg) (verdict, bool) {
	names, ok := outputOptions[n]
	if !ok {
		return verdict{}, false
	}
	values := optionValues(args, names)
	if n == "tree" {
		values = append(values, treeOutputs(args)...)
	}
	for i, a := range args {
		// o=-o/dev/sda; sort $o x: each value the command gives the word.
		for _, cand := range c.candidates(a)[1:] {
			with := append(append(append([]arg(nil), args[:i]...), cand), args[i+1:]...)
			values = append(values, optionValues(with, names)...)
		}
	}
	for _, v := range values {
		if r, bad := c.writeTarget(n, v); bad {
			return r, true
		}
		if fd, ok := descriptor(v.s); ok && v.static {
			if r := c.throughDescriptor(n, fd, v.s); r.v == Refuse {
				return r, true
			}
		}
	}
	return verdict{}, false
}
