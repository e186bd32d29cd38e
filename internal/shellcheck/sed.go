package shellcheck

import (
	"strings"
)

// sedScript is what a GNU sed script does besides printing: the files
// its w/W commands and s///w flags write, the files r/R read, whether e
// or s///e runs a command, and whether it is not understood.
type sedScript struct {
	writes  []string
	execs   []string // the commands e runs
	reads   bool
	runs    bool
	unknown string // a reason, when the script is not understood
}

// parseSed reads a sed script as GNU sed 4 does.
func parseSed(s string) sedScript {
	var out sedScript
	i := 0
	skipSpace := func() {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
			i++
		}
	}
	toEOL := func() string {
		start := i
		for i < len(s) && s[i] != '\n' {
			i++
		}
		return s[start:i]
	}
	// delimited reads up to an unescaped delimiter; false when unterminated.
	delimited := func(d byte) bool {
		for i < len(s) {
			switch {
			case s[i] == '\\' && i+1 < len(s):
				i += 2
			case s[i] == d:
				i++
				return true
			case s[i] == '\n' && d != '\n':
				return false
			default:
				i++
			}
		}
		return false
	}
	address := func() bool {
		switch {
		case i < len(s) && s[i] >= '0' && s[i] <= '9':
			for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '~') {
				i++
			}
		case i < len(s) && s[i] == '$':
			i++
		case i < len(s) && (s[i] == '/' || s[i] == '\\'):
			d := byte('/')
			if s[i] == '\\' {
				if i+1 >= len(s) {
					return false
				}
				d = s[i+1]
				i++
			}
			i++
			if !delimited(d) {
				return false
			}
			for i < len(s) && (s[i] == 'I' || s[i] == 'M') {
				i++
			}
		}
		return true
	}
	for i < len(s) {
		for i < len(s) && strings.IndexByte(" \t\n;", s[i]) >= 0 {
			i++
		}
		if i >= len(s) {
			break
		}
		if s[i] == '#' || s[i] == '}' {
			if s[i] == '#' {
				toEOL()
			} else {
				i++
			}
			continue
		}
		if !address() {
			out.unknown = "an address that does not end"
			return out
		}
		skipSpace()
		if i < len(s) && s[i] == ',' {
			i++
			skipSpace()
			if i < len(s) && (s[i] == '+' || s[i] == '~') {
				i++
			}
			if !address() {
				out.unknown = "an address that does not end"
				return out
			}
		}
		skipSpace()
		for i < len(s) && (s[i] == '!' || s[i] == ' ') {
			i++
		}
		if i >= len(s) {
			out.unknown = "an address without a command"
			return out
		}
		cmd := s[i]
		i++
		switch cmd {
		case '{', '=', 'd', 'D', 'g', 'G', 'h', 'H', 'n', 'N', 'p', 'P', 'x', 'z', 'F':
		case 'l', 'q', 'Q', 'L':
			skipSpace()
			for i < len(s) && s[i] >= '0' && s[i] <= '9' {
				i++
			}
		case 'b', 't', 'T', ':', 'v':
			// GNU sed 4 ends a label or version at whitespace or ";", and
			// reads the next command right after it (:a e cmd runs cmd).
			skipSpace()
			for i < len(s) && strings.IndexByte(" \t\n;", s[i]) < 0 {
				i++
			}
			continue
		case 'a', 'i', 'c':
			// Text to the end of the line, backslash-newline continuing it.
			for i < len(s) && s[i] != '\n' {
				if s[i] == '\\' && i+1 < len(s) {
					i++
				}
				i++
			}
		case 's', 'y':
			if i >= len(s) || s[i] == '\n' || s[i] == '\\' {
				out.unknown = "an s or y command without a delimiter"
				return out
			}
			d := s[i]
			i++
			if !delimited(d) || !delimited(d) {
				out.unknown = "an s or y command that does not end"
				return out
			}
			if cmd == 'y' {
				break
			}
			for i < len(s) && strings.IndexByte("gpiImM0123456789ew", s[i]) >= 0 {
				switch s[i] {
				case 'e':
					out.runs = true
				case 'w':
					i++
					skipSpace()
					out.writes = append(out.writes, toEOL())
					continue
				}
				i++
			}
		case 'e':
			out.runs = true
			skipSpace()
			out.execs = append(out.execs, toEOL())
		case 'w', 'W':
			skipSpace()
			out.writes = append(out.writes, toEOL())
		case 'r', 'R':
			out.reads = true
			toEOL()
		default:
			out.unknown = "the command " + string(cmd) + " is not one sed is known to have"
			return out
		}
		skipSpace()
		if i < len(s) && strings.IndexByte(";\n}#", s[i]) < 0 {
			out.unknown = "text after a command where sed expects its end"
			return out
		}
	}
	return out
}

var sedSpec = &optionSpec{short: "nErsuzb", shortVal: "efl", long: strings.Fields(`--quiet --silent --expression= --file=
	--regexp-extended --separate --unbuffered --null-data --line-length= --posix --debug --sandbox --follow-symlinks --binary
	--help --version`)}

// sedScripts are the scripts of a sed command line (its -e values, or
// its first operand), whether it reads one from a file, and whether it
// runs under --sandbox (which refuses e, w and r).
func sedScripts(args []arg) (scripts []arg, fromFile, sandboxed bool) {
	rest := args[1:]
	var operands []arg
	for i := 0; i < len(rest); i++ {
		s := rest[i].s
		switch {
		case s == "--":
			operands = append(operands, rest[i+1:]...)
			i = len(rest)
		case s == "--sandbox":
			sandboxed = true
		case s == "-e" || s == "--expression":
			if i+1 < len(rest) {
				scripts = append(scripts, rest[i+1])
				i++
			}
		case strings.HasPrefix(s, "--expression="):
			scripts = append(scripts, withValue(rest[i], strings.TrimPrefix(s, "--expression=")))
		case s == "-f" || s == "--file" || strings.HasPrefix(s, "--file="):
			fromFile = true
		case s == "-l" || s == "--line-length":
			i++
		case strings.HasPrefix(s, "-") && !strings.HasPrefix(s, "--") && len(s) > 1:
			// A cluster: e, f or l takes the rest of the word or the next.
			for j := 1; j < len(s); j++ {
				if s[j] != 'e' && s[j] != 'f' && s[j] != 'l' {
					continue
				}
				fromFile = fromFile || s[j] == 'f'
				if val := s[j+1:]; val != "" {
					if s[j] == 'e' {
						scripts = append(scripts, withValue(rest[i], val))
					}
				} else if i+1 < len(rest) {
					if s[j] == 'e' {
						scripts = append(scripts, rest[i+1])
					}
					i++
				}
				break
			}
		case strings.HasPrefix(s, "-") && s != "-" && rest[i].static:
		default:
			operands = append(operands, rest[i])
		}
	}
	if len(scripts) == 0 && !fromFile && len(operands) > 0 {
		scripts = operands[:1]
	}
	return scripts, fromFile, sandboxed
}

// sedOptions: sed is free with its known options and scripts that only
// print and edit the text it prints.
func (c *checker) sedOptions(args []arg) verdict {
	if v := checkOptions("sed", sedSpec, args[1:]); v.v != Allow {
		return v
	}
	scripts, fromFile, sandboxed := sedScripts(args)
	if fromFile {
		return ask("sed-script", "sed -f reads its script from a file, which is not analyzed")
	}
	if len(scripts) == 0 {
		return ask("sed-script", "sed without a script")
	}
	for _, sc := range scripts {
		if !sc.static {
			return ask("sed-script", "sed's script comes from an expansion")
		}
		if sandboxed {
			continue
		}
		p := parseSed(sc.s)
		switch {
		case p.unknown != "":
			return ask("sed-script", "sed's script is not understood: "+p.unknown)
		case p.runs:
			return ask("sed-execute", "sed's e command or s///e flag runs commands")
		case len(p.writes) > 0:
			return ask("sed-execute", "sed's w command or s///w flag writes "+p.writes[0])
		case p.reads:
			return ask("sed-script", "sed's r or R command reads a file into its output")
		}
	}
	return allow("free-command", "in the free list: sed with a script that only prints")
}
