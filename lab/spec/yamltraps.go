package spec

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"

	yamlv3 "gopkg.in/yaml.v3"
)

// CheckYAML finds what a YAML file means that its writer likely did not,
// before the file is decoded into shape (a struct type whose json tags
// name the keys): an empty file, a second document, tab indentation, and
// unquoted values YAML reads as another type than the text written
// (`name: no` is the boolean false, `version: 4.20` the number 4.2).
// what names the file in messages ("lab spec", "class spec") and example
// says how to get a full one. Problems found are returned as field errors.
func CheckYAML(data []byte, shape reflect.Type, what, example string) []FieldError {
	docs, err := yamlDocs(data)
	if err != nil {
		if fe, ok := tabError(data); ok {
			return []FieldError{fe}
		}
		return nil // the decoder names the syntax error itself
	}
	if len(docs) == 0 || isNull(docs[0]) {
		return []FieldError{{Field: "(file)", Msg: fmt.Sprintf("is empty (or only comments): write a %s (%s)", what, example)}}
	}
	if len(docs) > 1 {
		return []FieldError{{Field: "(file)", Msg: fmt.Sprintf("holds a second YAML document (after the '---' before line %d): bootlab reads one %s per file; put the other in a file of its own", docs[1].Line, what)}}
	}
	var errs []FieldError
	walkTraps(docs[0], shape, "", func(field, msg string) {
		errs = append(errs, FieldError{Field: field, Msg: msg})
	})
	return errs
}

// yamlDocs parses every document of data; after the first, an empty one
// (a stray "---") is not counted.
func yamlDocs(data []byte) ([]*yamlv3.Node, error) {
	dec := yamlv3.NewDecoder(bytes.NewReader(data))
	var docs []*yamlv3.Node
	for {
		var n yamlv3.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		if len(n.Content) == 0 {
			return docs, nil
		}
		if len(docs) > 0 && isNull(n.Content[0]) {
			continue // a stray '---' at the end starts nothing
		}
		docs = append(docs, n.Content[0])
	}
}

func isNull(n *yamlv3.Node) bool {
	return n.Kind == yamlv3.ScalarNode && n.Tag == "!!null"
}

// tabError names the first line indented with a tab: YAML indents with
// spaces only, and the parser's own message ("found character that cannot
// start any token") does not say so.
func tabError(data []byte) (FieldError, bool) {
	for i, line := range strings.Split(string(data), "\n") {
		indent := line[:len(line)-len(strings.TrimLeft(line, " \t"))]
		if strings.Contains(indent, "\t") {
			return FieldError{Field: "(file)", Msg: fmt.Sprintf("line %d is indented with a tab: YAML indents with spaces only; replace the tab with spaces", i+1)}, true
		}
	}
	return FieldError{}, false
}

// yaml11Bools are the plain words YAML 1.1 (which the spec decoder
// follows) reads as booleans.
var yaml11Bools = map[string]bool{
	"y": true, "yes": true, "on": true, "true": true,
	"n": false, "no": false, "off": false, "false": false,
}

// walkTraps follows node and the type it decodes into, reporting plain
// scalars a text field would receive as something else.
func walkTraps(n *yamlv3.Node, t reflect.Type, field string, add func(field, msg string)) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch n.Kind {
	case yamlv3.AliasNode:
		return // anchors are rare in specs; the decoder resolves them
	case yamlv3.ScalarNode:
		if t.Kind() == reflect.String {
			scalarTrap(n, field, add)
		}
	case yamlv3.SequenceNode:
		if t.Kind() != reflect.Slice && t.Kind() != reflect.Array {
			return
		}
		for i, c := range n.Content {
			walkTraps(c, t.Elem(), fmt.Sprintf("%s[%d]", field, i), add)
		}
	case yamlv3.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			key := n.Content[i].Value
			sub, ok := fieldType(t, key)
			if !ok {
				continue // an unknown key: the strict decoder names it
			}
			walkTraps(n.Content[i+1], sub, join(field, key), add)
		}
	}
}

func join(field, key string) string {
	if field == "" {
		return key
	}
	return field + "." + key
}

// fieldType is the type the value of key decodes into in t (a struct by
// its json tags, or a map by its value type).
func fieldType(t reflect.Type, key string) (reflect.Type, bool) {
	switch t.Kind() {
	case reflect.Map:
		return t.Elem(), t.Key().Kind() == reflect.String
	case reflect.Struct:
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == key && f.IsExported() {
				return f.Type, true
			}
		}
	}
	return nil, false
}

// scalarTrap reports a plain (unquoted) scalar that YAML 1.1 reads as a
// boolean or a number where text is wanted.
func scalarTrap(n *yamlv3.Node, field string, add func(field, msg string)) {
	if n.Style != 0 && n.Style != yamlv3.FlowStyle {
		return // quoted or a block scalar: text as written
	}
	quoted := fmt.Sprintf("%s: %q", field[strings.LastIndex(field, ".")+1:], n.Value)
	if strings.HasSuffix(field, "]") {
		quoted = fmt.Sprintf("- %q", n.Value)
	}
	if b, ok := yaml11Bool(n.Value); ok {
		add(field, fmt.Sprintf("%s is read by YAML as the boolean %t, not the text %q (line %d): quote it: %s", n.Value, b, n.Value, n.Line, quoted))
		return
	}
	switch {
	case n.Tag == "!!float":
		add(field, fmt.Sprintf("%s is read by YAML as a number, which drops what makes it text (4.20 becomes 4.2) (line %d): quote it: %s", n.Value, n.Line, quoted))
	case n.Tag == "!!int" && !isPlainDecimal(n.Value):
		add(field, fmt.Sprintf("%s is read by YAML as the number %s, not the text written (line %d): quote it: %s", n.Value, intText(n), n.Line, quoted))
	}
}

// yaml11Bool reads the words YAML 1.1 takes for booleans, in the three
// spellings it accepts (no, No, NO).
func yaml11Bool(v string) (bool, bool) {
	b, ok := yaml11Bools[strings.ToLower(v)]
	if !ok {
		return false, false
	}
	lower, upper := strings.ToLower(v), strings.ToUpper(v)
	title := upper[:1] + lower[1:]
	return b, v == lower || v == upper || v == title
}

// isPlainDecimal is an integer YAML keeps as written when made text again.
func isPlainDecimal(v string) bool {
	i, err := strconv.ParseInt(v, 10, 64)
	return err == nil && strconv.FormatInt(i, 10) == v
}

func intText(n *yamlv3.Node) string {
	var i int64
	if err := n.Decode(&i); err != nil {
		return "other than written"
	}
	return strconv.FormatInt(i, 10)
}
