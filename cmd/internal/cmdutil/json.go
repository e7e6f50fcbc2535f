package cmdutil

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// SchemaVersion is the version of every JSON document bootlab prints
// (docs/json.md). It changes only when a field changes meaning or goes.
const SchemaVersion = 1

// WriteJSON prints v, a JSON object, indented, with "schemaVersion" and
// "kind" first, so every -o json output names what it is and which
// version of its shape. v must marshal to an object.
func WriteJSON(w io.Writer, kind string, v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return err
	}
	body = bytes.TrimSpace(body)
	if len(body) < 2 || body[0] != '{' {
		return fmt.Errorf("%s: -o json prints objects, got %.20s", kind, body)
	}
	head := fmt.Sprintf(`{"schemaVersion":%d,"kind":%q`, SchemaVersion, kind)
	if !bytes.Equal(body, []byte("{}")) {
		head += ","
	}
	var out bytes.Buffer
	if err := json.Indent(&out, append([]byte(head), body[1:]...), "", "  "); err != nil {
		return err
	}
	out.WriteByte('\n')
	_, err = w.Write(out.Bytes())
	return err
}
