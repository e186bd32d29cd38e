package session

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/paddock-dev/paddock/internal/clip"
)

// CheckJSON refuses what encoding/json would otherwise accept silently, so
// that two different requests never read alike: a document that is not a
// JSON object, an object naming a key twice (the last would win), a key
// that matches one of v's fields only case-insensitively, and \u escapes
// of unpaired surrogates (decoded as U+FFFD). Syntax errors are left to
// the decoder, which reports them.
func CheckJSON(raw []byte, v any) error {
	if err := checkSurrogates(raw); err != nil {
		return err
	}
	fields := jsonFields(v)
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	type frame struct {
		obj, wantKey bool
		keys         map[string]bool
	}
	var stack []*frame
	valueDone := func() {
		if n := len(stack); n > 0 && stack[n-1].obj {
			stack[n-1].wantKey = true
		}
	}
	first := true
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil // end of the document, or a syntax error the decoder reports
		}
		if first {
			first = false
			if d, ok := tok.(json.Delim); !ok || d != '{' {
				return errors.New("want a JSON object")
			}
		}
		if n := len(stack); n > 0 && stack[n-1].obj && stack[n-1].wantKey {
			top := stack[n-1]
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:n-1]
				valueDone()
				if len(stack) == 0 {
					return nil
				}
				continue
			}
			k, _ := tok.(string)
			if top.keys[k] {
				return fmt.Errorf("key %q given twice", clip.String(k, 40))
			}
			top.keys[k] = true
			top.wantKey = false
			if n == 1 && fields != nil && !fields[k] {
				for f := range fields {
					if strings.EqualFold(f, k) {
						return fmt.Errorf("unknown field %q (field names are case-sensitive: %q)", clip.String(k, 40), f)
					}
				}
				return fmt.Errorf("unknown field %q", clip.String(k, 40))
			}
			continue
		}
		if len(stack) > maxDepth {
			return fmt.Errorf("nested more than %d deep", maxDepth)
		}
		switch d := tok.(type) {
		case json.Delim:
			switch d {
			case '{':
				stack = append(stack, &frame{obj: true, wantKey: true, keys: map[string]bool{}})
			case '[':
				stack = append(stack, &frame{})
			default:
				if len(stack) > 0 {
					stack = stack[:len(stack)-1]
				}
				valueDone()
			}
		default:
			valueDone()
		}
		if len(stack) == 0 {
			return nil
		}
	}
}

// maxDepth bounds the nesting of a document.
const maxDepth = 100

// checkSurrogates refuses \u escapes of surrogates that do not form a pair.
func checkSurrogates(raw []byte) error {
	inString := false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if !inString {
			if c == '"' {
				inString = true
			}
			continue
		}
		switch c {
		case '"':
			inString = false
		case '\\':
			if i+1 >= len(raw) {
				return nil
			}
			if raw[i+1] != 'u' {
				i++
				continue
			}
			r, ok := hex4(raw, i+2)
			if !ok {
				return nil // the decoder reports it
			}
			switch {
			case r >= 0xDC00 && r <= 0xDFFF:
				return fmt.Errorf("string escape \\u%04x is an unpaired surrogate (not a character)", r)
			case r >= 0xD800 && r <= 0xDBFF:
				lo, ok := rune(0), false
				if i+7 < len(raw) && raw[i+6] == '\\' && raw[i+7] == 'u' {
					lo, ok = hex4(raw, i+8)
				}
				if !ok || lo < 0xDC00 || lo > 0xDFFF {
					return fmt.Errorf("string escape \\u%04x is an unpaired surrogate (not a character)", r)
				}
				i += 11
			default:
				i += 5
			}
		}
	}
	return nil
}

func hex4(raw []byte, at int) (rune, bool) {
	if at+4 > len(raw) {
		return 0, false
	}
	var r rune
	for _, c := range raw[at : at+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// jsonFields is the set of JSON names of v's struct fields (nil when v is
// not a pointer to a struct).
func jsonFields(v any) map[string]bool {
	t := reflect.TypeOf(v)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	out := map[string]bool{}
	var walk func(reflect.Type)
	walk = func(t reflect.Type) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			tag := f.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, _, _ := strings.Cut(tag, ",")
			if f.Anonymous && name == "" {
				ft := f.Type
				if ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if ft.Kind() == reflect.Struct {
					walk(ft)
					continue
				}
			}
			if !f.IsExported() {
				continue
			}
			if name == "" {
				name = f.Name
			}
			out[name] = true
		}
	}
	walk(t)
	return out
}

// SameJSON compares two JSON documents ignoring formatting and key order.
func SameJSON(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	ca, _ := json.Marshal(x)
	cb, _ := json.Marshal(y)
	return bytes.Equal(ca, cb)
}
