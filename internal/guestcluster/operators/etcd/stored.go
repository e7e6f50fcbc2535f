package etcd

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// protobufMagic starts a value kube-apiserver stores in protobuf, its
// default for built-in kinds; a value without it is JSON (what
// kube-apiserver stores with --storage-media-type=application/json).
const protobufMagic = "k8s\x00"

// storedConfigMapData reads the data of a ConfigMap as etcd holds it.
func storedConfigMapData(value []byte) (map[string]string, error) {
	if raw, ok := bytes.CutPrefix(value, []byte(protobufMagic)); ok {
		var u runtime.Unknown
		if err := u.Unmarshal(raw); err != nil {
			return nil, fmt.Errorf("stored ConfigMap: %w", err)
		}
		var cm corev1.ConfigMap
		if err := cm.Unmarshal(u.Raw); err != nil {
			return nil, fmt.Errorf("stored ConfigMap: %w", err)
		}
		return cm.Data, nil
	}
	var cm corev1.ConfigMap
	if err := json.Unmarshal(value, &cm); err != nil {
		return nil, fmt.Errorf("stored ConfigMap is neither protobuf nor JSON: %w", err)
	}
	return cm.Data, nil
}

// etcdValue is the value of the one key of a range answer of etcd's v3
// JSON API (nil when the key is absent): it carries the value
// base64-encoded, so a binary (protobuf) value comes through whole.
func etcdValue(out []byte) ([]byte, error) {
	var got struct {
		KVs []struct {
			Value string `json:"value"`
		} `json:"kvs"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		return nil, fmt.Errorf("etcd range: %w", err)
	}
	switch len(got.KVs) {
	case 0:
		return nil, nil
	case 1:
		return base64.StdEncoding.DecodeString(got.KVs[0].Value)
	}
	return nil, errors.New("etcd range: more than one key")
}
