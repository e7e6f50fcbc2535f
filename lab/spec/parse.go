package spec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"

	yamlv3 "gopkg.in/yaml.v3"
	"sigs.k8s.io/yaml"

	"github.com/bootlab/bootlab/internal/userfile"
)

// Load reads a spec file. It does not apply defaults or validate.
func Load(path string) (*Spec, error) {
	data, err := userfile.Read(path, userfile.MaxTextBytes)
	if err != nil {
		var fe *userfile.Error
		if errors.As(err, &fe) && fe.NotExist {
			return nil, fmt.Errorf("lab spec %s not found: create it (`bootlab lab init -f %s` writes a small one to start from) or pass -f", path, path)
		}
		return nil, fmt.Errorf("lab spec (-f) %w", err)
	}
	return Parse(data, path)
}

// Parse decodes a spec, rejecting unknown fields so a typo names itself.
func Parse(data []byte, source string) (*Spec, error) {
	if errs := CheckYAML(data, reflect.TypeOf(Spec{}), "lab spec", "`bootlab lab init -f -` prints a small one to start from"); len(errs) > 0 {
		return nil, &ValidationError{Source: source, Errs: errs}
	}
	var head struct {
		Kind string `json:"kind"`
	}
	if err := yaml.Unmarshal(data, &head); err == nil && head.Kind == "Class" {
		return nil, &ValidationError{Source: source, Errs: []FieldError{{Field: "kind", Msg: "Class: this is a class spec, not a lab spec: give it to the class commands (bootlab class config, class up, ... with -f)"}}}
	}
	var s Spec
	if err := yaml.UnmarshalStrict(data, &s); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, &ValidationError{Source: source, Errs: []FieldError{typeFieldError(data, te)}}
		}
		return nil, &ValidationError{Source: source, Errs: []FieldError{yamlFieldError(data, err)}}
	}
	var keys struct {
		Topology map[string]any `json:"topology"`
	}
	if err := yaml.Unmarshal(data, &keys); err == nil {
		_, s.mastersGiven = keys.Topology["masters"]
	}
	return &s, nil
}

// typeFieldError says what a field of the wrong type should hold, in the
// spec's words rather than Go's ("want a whole number, got "2"", the line).
func typeFieldError(data []byte, te *json.UnmarshalTypeError) FieldError {
	field := te.Field
	want := "a value of another type"
	switch te.Type.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		want = "a whole number"
	case reflect.String:
		want = "text"
	case reflect.Bool:
		want = "true or false"
	case reflect.Slice, reflect.Array:
		want = "a list (lines starting with '- ')"
	case reflect.Struct, reflect.Map:
		want = "a mapping (key: value lines)"
	}
	got := "a " + te.Value
	var doc any
	if err := yaml.Unmarshal(data, &doc); err == nil {
		if v, ok := lookupPath(doc, strings.Split(field, ".")); ok {
			if b, err := json.Marshal(v); err == nil && len(b) <= 40 {
				got = string(b)
			}
		}
	}
	msg := fmt.Sprintf("want %s, got %s", want, got)
	if line := keyLine(data, field); line > 0 {
		msg += fmt.Sprintf(" (line %d)", line)
	}
	return FieldError{Field: field, Msg: msg}
}

// lookupPath follows a dotted path of mapping keys in a decoded document.
func lookupPath(doc any, path []string) (any, bool) {
	for _, k := range path {
		m, ok := doc.(map[string]any)
		if !ok {
			return nil, false
		}
		if doc, ok = m[k]; !ok {
			return nil, false
		}
	}
	return doc, true
}

// keyLine is the line of the first "KEY:" of a dotted field's last key.
func keyLine(data []byte, field string) int {
	return lineOfKey(data, field[strings.LastIndex(field, ".")+1:])
}

// lineOfKey is the line of the first "KEY:" in data, 0 if none.
func lineOfKey(data []byte, key string) int {
	re := regexp.MustCompile(`(^|[\s{,])` + regexp.QuoteMeta(key) + `\s*:`)
	for i, l := range strings.Split(string(data), "\n") {
		if re.MatchString(l) {
			return i + 1
		}
	}
	return 0
}

func yamlFieldError(data []byte, err error) FieldError {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "error unmarshaling JSON: while decoding JSON: ")
	msg = strings.TrimPrefix(msg, "error converting YAML to JSON: ")
	if name, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		return UnknownField(data, strings.Trim(name, `"`), "lab spec",
			"unknown field: check its spelling and place against README.md's \"The lab spec\" (every field, with its default)")
	}
	return FieldError{Field: "(file)", Msg: Unquoted(msg) + ": fix the YAML syntax"}
}

// quotedText is what a YAML or JSON parser's message quotes of its input:
// 'anchor', "key", a Go value such as []interface {}{"x"}.
var quotedText = regexp.MustCompile(`'[^']*'|"[^"]*"|\[\]interface \{\}\{.*\}|map\[[^\]]*\][^ ]*\{.*\}`)

// Unquoted is a parser's message with every piece of quoted input
// replaced by '…' but a "key" that looks like a field name: the message
// keeps its line number and what is wrong, never a line of someone else's
// file (an anchor's name is input too).
func Unquoted(msg string) string {
	return quotedText.ReplaceAllStringFunc(msg, func(q string) string {
		if len(q) >= 2 && q[0] == '"' && fieldName.MatchString(q[1:len(q)-1]) {
			return q
		}
		return "'…'"
	})
}

// fieldName is what a key of a bootlab spec looks like: a word, camelCase.
var fieldName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]{0,39}$`)

// UnknownField is the error for a key the spec (what: "lab spec", "class
// spec") has no field for, msg saying what to do. The key is quoted only
// when it looks like a field name: a file that is no spec at all (`sudo
// bootlab lab config -f /etc/shadow`) is never read aloud, only its line
// number given.
func UnknownField(data []byte, key, what, msg string) FieldError {
	if fieldName.MatchString(key) {
		return FieldError{Field: key, Msg: msg}
	}
	where := "a key"
	if line := lineOfKey(data, key); line > 0 {
		where = fmt.Sprintf("the key on line %d", line)
	}
	return FieldError{Field: "(file)", Msg: fmt.Sprintf("%s is not a field name (its text is not shown): is this file a %s?", where, what)}
}

// Marshal renders the spec as YAML.

// Keys keep the spec's own order (apiVersion and kind first, as the Spec
// type lists them), not the alphabetical order a map would give.
func (s *Spec) Marshal() ([]byte, error) {
	j, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	// JSON is YAML: a yaml.v3 node keeps the order of the keys it reads.
	var n yamlv3.Node
	if err := yamlv3.Unmarshal(j, &n); err != nil {
		return nil, err
	}
	plainStyle(&n)
	var b bytes.Buffer
	enc := yamlv3.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&n); err != nil {
		return nil, err
	}
	return b.Bytes(), enc.Close()
}

// plainStyle drops the flow and quoting styles a node read from JSON has,
// so the YAML reads like one a person wrote. Text YAML 1.1 would read as
// a boolean (no, off) stays quoted: Parse refuses it plain, and the printed
// spec must read back as it was.
func plainStyle(n *yamlv3.Node) {
	n.Style &^= yamlv3.FlowStyle
	if _, isBool := yaml11Bool(n.Value); n.Kind != yamlv3.ScalarNode || n.Tag != "!!str" || !isBool {
		n.Style &^= yamlv3.DoubleQuotedStyle
	}
	for _, c := range n.Content {
		plainStyle(c)
	}
}
