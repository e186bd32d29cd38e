package shellcheck

import (
	"strings"
)

// awkProblem says why an awk program does more than read its input and
// print to its output ("" when it does not): system(), a pipe to or from
// a command, an output redirection of print or printf, getline from a
// file or command, or gawk's @ directives and indirect calls.
func awkProblem(p string) string {
	i := 0
	operand := false // the last token ends an operand: "/" divides
	inPrint := false
	printDepth, depth := 0, 0
	if strings.Contains(p, "/inet") {
		return "gawk's /inet/ files are network connections"
	}
	for i < len(p) {
		ch := p[i]
		last := byte(0) // the last character before this one that is not blank
		for k := i - 1; k >= 0; k-- {
			if c := p[k]; c != ' ' && c != '\t' && c != '\r' {
				last = c
				break
			}
		}
		switch {
		case ch == '#':
			for i < len(p) && p[i] != '\n' {
				i++
			}
			continue
		case ch == '"':
			i++
			for i < len(p) && p[i] != '"' {
				if p[i] == '\\' {
					i++
				}
				i++
			}
			i++
			operand = true
			continue
		case ch == '/' && !operand:
			i++
			start := i
			inClass := false
			for i < len(p) && (p[i] != '/' || inClass) {
				switch p[i] {
				case '\\':
					i++
				case '[':
					inClass = true
				case ']':
					inClass = false
				case '\n':
					return "a regular expression that does not end"
				}
				i++
			}
			if body := p[start:min(i, len(p))]; strings.Contains(body, "system") || strings.Contains(body, "getline") ||
				strings.ContainsAny(body, "\"@") {
				return "a regular expression holding what would be code were its slash a division"
			}
			i++
			operand = true
			continue
		case ch == '_' || ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z':
			start := i
			for i < len(p) && (p[i] == '_' || p[i] >= 'a' && p[i] <= 'z' || p[i] >= 'A' && p[i] <= 'Z' || p[i] >= '0' && p[i] <= '9') {
				i++
			}
			switch word := p[start:i]; word {
			case "system":
				return "system() runs a shell command"
			case "print", "printf":
				inPrint, printDepth = true, depth
				operand = false
				continue
			case "getline":
				j := i
				for j < len(p) && strings.IndexByte(";}\n", p[j]) < 0 {
					j++
				}
				if strings.Contains(p[i:j], "<") {
					return "getline < reads a file the program names (gawk's /inet/ files are network connections)"
				}
				operand = false
				continue
			case "in", "return", "case", "else", "do", "exit", "delete", "while", "if", "for":
				operand = false // a slash after these starts a regular expression
				continue
			case "ARGV":
				return "ARGV names the files awk reads (gawk's /inet/ files are network connections)"
			}
			operand = true
			continue
		case ch >= '0' && ch <= '9' || ch == '.':
			for i < len(p) && (p[i] >= '0' && p[i] <= '9' || p[i] == '.' || p[i] == 'e' || p[i] == 'E' || p[i] == 'x' || p[i] >= 'a' && p[i] <= 'f') {
				i++
			}
			operand = true
			continue
		case ch == '@':
			return "gawk's @ directives and indirect calls load or call code"
		case ch == '|':
			if i+1 < len(p) && p[i+1] == '|' {
				i += 2
				operand = false
				continue
			}
			return "a pipe runs a shell command"
		case ch == '>' && inPrint && depth == printDepth:
			return "print > or >> writes a file"
		case ch == '(' || ch == '[':
			depth++
			operand = false
		case ch == ')' || ch == ']':
			depth--
			operand = true
		case ch == '\n' && (last == ',' || last == '|' || last == '&' || last == '{'):
			// awk continues a statement after , || && and {.
		case ch == ';' || ch == '\n' || ch == '{' || ch == '}':
			if depth <= printDepth {
				inPrint = false
			}
			operand = false
		case ch == '$':
			operand = false
		case (ch == '+' || ch == '-') && i+1 < len(p) && p[i+1] == ch:
			i += 2
			operand = true // x++ / 2 divides (gawk reads it so)
			continue
		case ch == '\\' && i+1 < len(p) && p[i+1] == '\n':
			i += 2
			continue
		case ch == ' ' || ch == '\t' || ch == '\r':
		default:
			operand = false
		}
		i++
	}
	return ""
}

var awkSpec = &optionSpec{short: "bcPrn", shortVal: "Fve",
	long: strings.Fields(`--field-separator= --assign= --source= --characters-as-bytes --traditional --posix --re-interval
	--sandbox --help --version`)}

// awkOptions: awk is free with a program, given on the command line, that
// only reads its input and prints. Options come before the program (awk
// stops reading options there); the words after it are files or
// assignments, never options.
func (c *checker) awkOptions(args []arg) verdict {
	var programs []arg
	rest := args[1:]
	i := 0
	for ; i < len(rest); i++ {
		a := rest[i]
		if v, bad := wordProblem(a, false); bad {
			return v
		}
		s := a.s
		if s == "--" {
			i++
			break
		}
		if !strings.HasPrefix(s, "-") || s == "-" {
			break
		}
		if strings.HasPrefix(s, "--") {
			name, val, eq := strings.Cut(s, "=")
			switch awkSpec.longKind(name) {
			case 0:
				return ask("unknown-option", "awk "+name+" is not among the options known to keep it free")
			case 2:
				if !eq {
					i++
					if i >= len(rest) {
						return ask("unknown-option", "awk "+name+" without its value")
					}
					if !rest[i].static {
						return ask("dynamic-argument", "awk "+name+" with a value from an expansion")
					}
					val = rest[i].s
				}
				if name == "--source" {
					programs = append(programs, static([]string{val})[0])
				}
			}
			continue
		}
		// A cluster: F, v and e take the rest of the word or the next word.
		for j := 1; j < len(s); j++ {
			ch := s[j]
			if strings.IndexByte(awkSpec.short, ch) >= 0 {
				continue
			}
			if strings.IndexByte(awkSpec.shortVal, ch) < 0 {
				return ask("unknown-option", "awk -"+string(ch)+" is not among the options known to keep it free (-f reads the program from a file)")
			}
			val := s[j+1:]
			if val == "" {
				i++
				if i >= len(rest) {
					return ask("unknown-option", "awk -"+string(ch)+" without its value")
				}
				if !rest[i].static {
					return ask("dynamic-argument", "awk -"+string(ch)+" with a value from an expansion")
				}
				val = rest[i].s
			}
			if ch == 'e' {
				programs = append(programs, static([]string{val})[0])
			}
			break
		}
	}
	if len(programs) == 0 {
		if i >= len(rest) {
			return ask("awk-program", "awk without a program on its command line")
		}
		programs = append(programs, rest[i])
		i++
	}
	for _, op := range rest[min(i, len(rest)):] {
		if strings.Contains(op.s, "/inet") || !op.static && strings.HasPrefix(op.prefix, "/") {
			return ask("network-device", "awk "+op.s+": gawk reads /inet/... files as network connections")
		}
	}
	for _, p := range programs {
		if !p.static {
			return ask("awk-program", "awk's program comes from an expansion")
		}
		if why := awkProblem(p.s); why != "" {
			return ask("awk-system", "awk: "+why)
		}
	}
	return allow("free-command", "in the free list: awk with a program that only reads and prints")
}
