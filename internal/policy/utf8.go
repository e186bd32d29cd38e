package policy

import (
	"fmt"
	"reflect"
	"unicode/utf8"
)

// CheckUTF8 refuses a value read from YAML holding a string (or map key)
// that is not valid UTF-8, as a !!binary scalar can: encoded as JSON it
// would be silently replaced with U+FFFD. what names the value.
func CheckUTF8(what string, v any) error {
	if path := invalidUTF8(reflect.ValueOf(v), what); path != "" {
		return fmt.Errorf("%s is not valid UTF-8", path)
	}
	return nil
}

func invalidUTF8(v reflect.Value, path string) string {
	switch v.Kind() {
	case reflect.String:
		if !utf8.ValidString(v.String()) {
			return path
		}
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			return invalidUTF8(v.Elem(), path)
		}
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Uint8 {
			return "" // bytes (json.RawMessage) are not text
		}
		for i := 0; i < v.Len(); i++ {
			if p := invalidUTF8(v.Index(i), fmt.Sprintf("%s[%d]", path, i)); p != "" {
				return p
			}
		}
	case reflect.Map:
		it := v.MapRange()
		for it.Next() {
			if p := invalidUTF8(it.Key(), path+" key"); p != "" {
				return p
			}
			if p := invalidUTF8(it.Value(), fmt.Sprintf("%s.%v", path, it.Key())); p != "" {
				return p
			}
		}
	case reflect.Struct:
		t := v.Type()
		for i := 0; i < v.NumField(); i++ {
			if !t.Field(i).IsExported() {
				continue
			}
			if p := invalidUTF8(v.Field(i), path+"."+t.Field(i).Name); p != "" {
				return p
			}
		}
	}
	return ""
}
