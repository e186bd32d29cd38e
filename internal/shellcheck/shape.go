package shellcheck

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// shape is a parsed command's structure as text, without what does not
// change what runs: positions, comments, layout, how a literal character
// is quoted when quoting does not change its meaning, the form a function
// is declared in, $'..' (its decoded value) and $".." (as ".."). Two
// readings of a command with the same shape run the same programs with
// the same words: the analyzer's reading of the original and its reading
// of bash's printing of it are compared this way.
func shape(stmts []*syntax.Stmt) string {
	var b strings.Builder
	writeShape(&b, reflect.ValueOf(stmts))
	return b.String()
}

var (
	posType      = reflect.TypeOf(syntax.Pos{})
	commentsType = reflect.TypeOf([]syntax.Comment(nil))
	commentType  = reflect.TypeOf(syntax.Comment{})
)

func writeShape(b *strings.Builder, v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			b.WriteString("nil")
			return
		}
		switch x := v.Interface().(type) {
		case *syntax.Word:
			writeWord(b, x)
			return
		case *syntax.Redirect:
			writeRedirect(b, x)
			return
		case *syntax.BinaryCmd:
			if x.Op == syntax.PipeAll && x.X != nil {
				// a |& b is a 2>&1 | b, as bash prints it.
				left := *x.X
				left.Redirs = append(append([]*syntax.Redirect(nil), left.Redirs...),
					&syntax.Redirect{Op: syntax.DplOut, N: &syntax.Lit{Value: "2"}, Word: lit("1")})
				cp := *x
				cp.Op, cp.X = syntax.Pipe, &left
				writeShape(b, reflect.ValueOf(cp))
				return
			}
		}
		writeShape(b, v.Elem())
	case reflect.Struct:
		t := v.Type()
		b.WriteString(t.Name())
		b.WriteByte('{')
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if !f.IsExported() || f.Type == posType || f.Type == commentsType || f.Type == commentType {
				continue
			}
			if t.Name() == "FuncDecl" && (f.Name == "RsrvWord" || f.Name == "Parens") {
				continue
			}
			b.WriteString(f.Name)
			b.WriteByte(':')
			writeShape(b, v.Field(i))
			b.WriteByte(' ')
		}
		b.WriteByte('}')
	case reflect.Slice:
		b.WriteByte('[')
		for i := 0; i < v.Len(); i++ {
			writeShape(b, v.Index(i))
			b.WriteByte(',')
		}
		b.WriteByte(']')
	case reflect.String:
		b.WriteString(strconv.Quote(v.String()))
	default:
		fmt.Fprint(b, v.Interface())
	}
}

// plainChar: a character whose meaning does not depend on quoting.
func plainChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-_./:@%+,=^", c) >= 0 || c >= 0x80
}

func quotedChar(b *strings.Builder, c byte) {
	if !plainChar(c) {
		b.WriteByte('\\')
	}
	b.WriteByte(c)
}

// writeWord writes a word as the characters it stands for, each special
// character marked quoted or not, and its expansions as their shapes.
func writeWord(b *strings.Builder, w *syntax.Word) {
	b.WriteString("W<")
	for _, part := range w.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			v := p.Value
			for i := 0; i < len(v); i++ {
				if v[i] == '\\' && i+1 < len(v) {
					i++
					if v[i] != '\n' {
						quotedChar(b, v[i])
					}
					continue
				}
				b.WriteByte(v[i])
			}
		case *syntax.SglQuoted:
			v := p.Value
			if p.Dollar {
				v = ansiC(v)
			}
			for i := 0; i < len(v); i++ {
				quotedChar(b, v[i])
			}
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				if l, ok := q.(*syntax.Lit); ok {
					v := unescapeDouble(l.Value)
					for i := 0; i < len(v); i++ {
						quotedChar(b, v[i])
					}
					continue
				}
				b.WriteString("«q")
				writeShape(b, reflect.ValueOf(q))
				b.WriteString("»")
			}
		default:
			b.WriteString("«")
			writeShape(b, reflect.ValueOf(part))
			b.WriteString("»")
		}
	}
	b.WriteString(">")
}

// writeRedirect writes a redirection; a here-document's body is written
// as bash prints it: tabs stripped for <<-, line continuations of an
// unquoted body joined.
func writeRedirect(b *strings.Builder, r *syntax.Redirect) {
	fmt.Fprintf(b, "Redirect{Op:%d N:", r.Op)
	switch {
	case r.N != nil:
		b.WriteString(r.N.Value)
	case r.Op == syntax.RdrOut || r.Op == syntax.AppOut || r.Op == syntax.RdrClob || r.Op == syntax.AppClob || r.Op == syntax.DplOut:
		b.WriteString("1") // bash prints >&2 as 1>&2
	case r.Op == syntax.RdrIn || r.Op == syntax.DplIn || r.Op == syntax.RdrInOut || r.Op == syntax.Hdoc || r.Op == syntax.DashHdoc ||
		r.Op == syntax.WordHdoc:
		b.WriteString("0")
	}
	b.WriteString(" Word:")
	if r.Word != nil {
		writeWord(b, r.Word)
	}
	if r.Hdoc != nil {
		b.WriteString(" Hdoc:")
		quoted := quotedDelim(r.Word)
		atLineStart := true
		for _, part := range r.Hdoc.Parts {
			l, ok := part.(*syntax.Lit)
			if !ok {
				b.WriteString("«")
				writeShape(b, reflect.ValueOf(part))
				b.WriteString("»")
				atLineStart = false
				continue
			}
			v := l.Value
			for i := 0; i < len(v); i++ {
				c := v[i]
				if r.Op == syntax.DashHdoc && atLineStart && c == '\t' {
					continue
				}
				if !quoted && c == '\\' && i+1 < len(v) {
					if v[i+1] == '\n' {
						i++
						continue
					}
					b.WriteByte(c)
					i++
					c = v[i]
				}
				b.WriteByte(c)
				atLineStart = c == '\n'
			}
		}
	}
	b.WriteByte('}')
}

// bashBody parses bash's printing of the function canonScript defines
// and returns its body as a file of its own (positions are in out).
func bashBody(out string) (*syntax.File, error) {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(out), "")
	if err != nil {
		return nil, fmt.Errorf("the analyzer cannot parse bash's printing of the command: %w", err)
	}
	if len(f.Stmts) != 1 {
		return nil, errors.New("bash's printing of the command is not one function")
	}
	fd, ok := f.Stmts[0].Cmd.(*syntax.FuncDecl)
	if !ok || fd.Name == nil || fd.Name.Value != canonFunc || len(f.Stmts[0].Redirs) > 0 {
		return nil, errors.New("bash's printing of the command is not the function it was given")
	}
	blk, ok := fd.Body.Cmd.(*syntax.Block)
	if !ok || len(fd.Body.Redirs) > 0 {
		return nil, errors.New("bash's printing of the command is not a function body")
	}
	return &syntax.File{Stmts: blk.Stmts}, nil
}
