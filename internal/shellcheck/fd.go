package shellcheck

import (
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// descriptor is the file descriptor a path reopens: /dev/fd/N,
// /dev/stdin, /dev/stdout and /dev/stderr, /proc/self/fd/N (and
// thread-self, or any process). n is -1 when N is not known.
func descriptor(p string) (n int, ok bool) {
	p = clean(p)
	switch p {
	case "/dev/stdin":
		return 0, true
	case "/dev/stdout":
		return 1, true
	case "/dev/stderr":
		return 2, true
	}
	var rest string
	switch {
	case strings.HasPrefix(p, "/dev/fd/"):
		rest = p[len("/dev/fd/"):]
	case strings.HasPrefix(p, "/proc/"):
		// Only this process's own: /proc/1/fd/1 is another process's file.
		parts := strings.SplitN(p[len("/proc/"):], "/", 3)
		if len(parts) < 3 || parts[1] != "fd" || parts[0] != "self" && parts[0] != "thread-self" {
			return 0, false
		}
		rest = parts[2]
	default:
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 0 {
		return -1, true
	}
	return n, true
}

// redirFd is the descriptor a redirection sets, and whether it sets
// both 1 and 2 (&>).
func redirFd(r *syntax.Redirect) (int, bool) {
	if r.N != nil {
		n, err := strconv.Atoi(r.N.Value)
		if err != nil {
			return -1, false
		}
		return n, false
	}
	switch r.Op {
	case syntax.RdrAll, syntax.AppAll, syntax.RdrAllClob, syntax.AppAllClob:
		return 1, true
	case syntax.RdrIn, syntax.DplIn, syntax.RdrInOut, syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc:
		return 0, false
	}
	return 1, false
}

// fdTargets are what the command's redirections point each descriptor
// at, wherever they are (order is not tracked: every candidate counts):
// a file, here-document or expansion; a duplication of 1 or 2, a
// closing and the harmless sinks point it nowhere that matters.
func (c *checker) fdTargets() map[int][]arg {
	targets := map[int][]arg{}
	dups := map[int][]int{}
	for _, root := range c.roots {
		syntax.Walk(root, func(n syntax.Node) bool {
			r, ok := n.(*syntax.Redirect)
			if !ok || r.Word == nil {
				return true
			}
			fd, both := redirFd(r)
			set := func(a arg) {
				targets[fd] = append(targets[fd], a)
				if both {
					targets[2] = append(targets[2], a)
				}
			}
			switch r.Op {
			case syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc:
				set(arg{s: "a here-document", static: true})
				return true
			case syntax.DplIn, syntax.DplOut:
				a := resolve(r.Word)
				m, err := strconv.Atoi(strings.TrimSuffix(a.s, "-"))
				switch {
				case a.static && a.s == "-":
				case a.static && err == nil && m <= 2:
				case a.static && err == nil:
					dups[fd] = append(dups[fd], m)
				default:
					set(a)
				}
				return true
			}
			for _, a := range words(r.Word) {
				if a.static && harmlessDevices[clean(a.s)] && clean(a.s) != "/dev/stdin" {
					continue
				}
				if n, ok := descriptor(a.s); ok && a.static && (n == 1 || n == 2) {
					continue // >/dev/fd/1: the command's own output again
				}
				set(a)
			}
			return true
		})
	}
	for range 4 {
		for fd, ms := range dups {
			for _, m := range ms {
				targets[fd] = append(targets[fd], targets[m]...)
				if len(targets[m]) == 0 {
					targets[fd] = append(targets[fd], arg{s: "descriptor " + strconv.Itoa(m), static: true})
				}
			}
		}
	}
	return targets
}

// throughDescriptor judges a write to a path that reopens descriptor n:
// free only for standard output and error, and only when the command
// points neither at a file; refused when it may reopen a device or a
// system file.
func (c *checker) throughDescriptor(what string, n int, p string) verdict {
	targets := c.fdTargets()
	check := []int{n}
	if n == 1 || n == 2 {
		check = []int{1, 2}
	}
	for _, fd := range check {
		for _, t := range targets[fd] {
			if v, bad := c.writeTarget(what, t); bad {
				return refuse(v.rule, what+" "+p+" reopens descriptor "+strconv.Itoa(fd)+", which the command points at "+t.s+": "+v.reason)
			}
		}
	}
	switch {
	case n < 0:
		return ask("descriptor-write", what+" "+p+": a descriptor that is not known")
	case n == 0:
		return ask("descriptor-write", what+" "+p+" reopens standard input, which may be a file")
	case n > 2:
		return ask("descriptor-write", what+" "+p+" reopens descriptor "+strconv.Itoa(n)+", which the command may point at a file")
	}
	for _, fd := range check {
		if len(targets[fd]) > 0 {
			return ask("descriptor-write", what+" "+p+" reopens descriptor "+strconv.Itoa(fd)+", which the command points at "+targets[fd][0].s)
		}
	}
	return allow("harmless-sink", "writes to "+p+", the command's own output")
}
