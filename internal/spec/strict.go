package spec

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// FieldError says which field of a document is wrong and why.
type FieldError struct {
	Doc    int    // 1-based document index in a multi-document file
	Line   int    // 0 when unknown
	Path   string // e.g. "session.idleTimeout", "tools[2]"
	Reason string
}

func (e *FieldError) Error() string {
	loc := ""
	if e.Line > 0 {
		loc = fmt.Sprintf(" (document %d, line %d)", e.Doc, e.Line)
	}
	return fmt.Sprintf("%s: %s%s", e.Path, e.Reason, loc)
}

var durationType = reflect.TypeOf(Duration(0))

// decodeStrict decodes node into v (a pointer to struct), refusing unknown
// fields and values of the wrong type with the field's path.
func decodeStrict(doc int, node *yaml.Node, v any) error {
	if err := check(doc, node, reflect.TypeOf(v).Elem(), ""); err != nil {
		return err
	}
	if err := node.Decode(v); err != nil {
		return &FieldError{Doc: doc, Line: node.Line, Path: "(document)", Reason: err.Error()}
	}
	return nil
}

func join(path, field string) string {
	if path == "" {
		return field
	}
	return path + "." + field
}

func check(doc int, n *yaml.Node, t reflect.Type, path string) error {
	fail := func(reason string) error {
		p := path
		if p == "" {
			p = "(document)"
		}
		return &FieldError{Doc: doc, Line: n.Line, Path: p, Reason: reason}
	}
	if n.Kind == yaml.AliasNode {
		return fail("YAML aliases are not supported in specs")
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil
	}
	if t == durationType {
		if n.Kind != yaml.ScalarNode {
			return fail("want a duration such as 15m or 90s")
		}
		if _, err := time.ParseDuration(n.Value); err != nil {
			return fail(fmt.Sprintf("%q is not a duration (want e.g. 15m, 90s, 1h30m)", n.Value))
		}
		return nil
	}
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return fail("want a mapping of fields")
		}
		fields := map[string]reflect.StructField{}
		var names []string
		for i := range t.NumField() {
			f := t.Field(i)
			name := strings.Split(f.Tag.Get("yaml"), ",")[0]
			if name == "" || name == "-" {
				continue
			}
			fields[name] = f
			names = append(names, name)
		}
		seen := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := n.Content[i], n.Content[i+1]
			f, ok := fields[k.Value]
			if !ok {
				return &FieldError{Doc: doc, Line: k.Line, Path: join(path, k.Value), Reason: "unknown field (known fields: " + strings.Join(names, ", ") + ")"}
			}
			if seen[k.Value] {
				return &FieldError{Doc: doc, Line: k.Line, Path: join(path, k.Value), Reason: "field given twice"}
			}
			seen[k.Value] = true
			if err := check(doc, val, f.Type, join(path, k.Value)); err != nil {
				return err
			}
		}
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return fail("want a list")
		}
		for i, item := range n.Content {
			if err := check(doc, item, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return fail("want a mapping")
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			if err := check(doc, n.Content[i+1], t.Elem(), join(path, n.Content[i].Value)); err != nil {
				return err
			}
		}
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			return fail("want a string")
		}
	case reflect.Int, reflect.Int64:
		if n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
			return fail(fmt.Sprintf("want a whole number, got %q", n.Value))
		}
	case reflect.Float64:
		if n.Kind != yaml.ScalarNode || (n.Tag != "!!int" && n.Tag != "!!float") {
			return fail(fmt.Sprintf("want a number, got %q", n.Value))
		}
	case reflect.Bool:
		if _, err := strconv.ParseBool(n.Value); n.Kind != yaml.ScalarNode || n.Tag != "!!bool" || err != nil {
			return fail(fmt.Sprintf("want true or false, got %q", n.Value))
		}
	}
	return nil
}

// noSecret refuses a value holding a credential the secret detector finds:
// a spec is stored and shown in clear text, so a token in environment.env
// or a password in a repository URL would be too. Credentials reach a
// session by other means, never through its agent's YAML.
func noSecret(find func(string) string, doc int, n *yaml.Node, path string) error {
	switch n.Kind {
	case yaml.ScalarNode:
		if rule := find(n.Value); rule != "" {
			return &FieldError{Doc: doc, Line: n.Line, Path: path, Reason: fmt.Sprintf(
				"holds a secret (%s); an agent spec is stored and shown in clear text, so credentials never go in it: remove it and rotate it", rule)}
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if err := noSecret(find, doc, n.Content[i+1], join(path, n.Content[i].Value)); err != nil {
				return err
			}
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			if err := noSecret(find, doc, c, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	}
	return nil
}
