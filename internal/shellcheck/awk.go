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
	for i < len(p) {
		ch := p[i]
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
				for j < len(p) && (p[j] == ' ' || p[j] == '\t' || p[j] == '_' || p[j] >= 'a' && p[j] <= 'z' || p[j] >= 'A' && p[j] <= 'Z' || p[j] >= '0' && p[j] <= '9' || p[j] == '$') {
					j++
				}
				if j < len(p) && p[j] == '<' {
					return "getline < reads a file the program names (gawk's /inet/ files are network connections)"
				}
			case "in", "return", "case":
				operand = false
				continue
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
		case ch == ';' || ch == '\n' || ch == '{' || ch == '}':
			if depth <= printDepth {
				inPrint = false
			}
			operand = false
		case ch == '$':
			operand = false
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
// only reads its input and prints.
func (c *checker) awkOptions(args []arg) verdict {
	if v := checkOptions("awk", awkSpec, args[1:]); v.v != Allow {
		return v
	}
	var programs []arg
	rest := args[1:]
	for i := 0; i < len(rest); i++ {
		s := rest[i].s
		switch {
		case s == "--":
			if len(programs) == 0 && i+1 < len(rest) {
				programs = append(programs, rest[i+1])
			}
			i = len(rest)
		case s == "-e" || s == "--source":
			if i+1 < len(rest) {
				programs = append(programs, rest[i+1])
			}
			i++
		case s == "-F" || s == "-v" || s == "--field-separator" || s == "--assign":
			i++
		case strings.HasPrefix(s, "-") && len(s) > 1:
		default:
			if len(programs) == 0 {
				programs = append(programs, rest[i])
			}
			i = len(rest)
		}
	}
	if len(programs) == 0 {
		return ask("awk-program", "awk without a program on its command line")
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
