//go:build ignore

// generate writes the JSON schemas that .ci/deploy gives kubeconform to check the Helm chart's
// manifests offline (kubeconform -schema-location deploy/helm/schemas/{{.ResourceKind}}{{.KindSuffix}}.json):
// one file per kind the chart renders, each standalone (every $ref inlined) and strict (an
// object allows only the fields it names), as kubeconform's own schemas are.
//
// The sources are Go modules, read from the Go module cache (`go mod download` fetches them):
//   - the Kubernetes API's OpenAPI document, api/openapi-spec/swagger.json of the module
//     k8s.io/kubernetes at kubernetesVersion;
//   - the ServiceMonitor CustomResourceDefinition,
//     example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml of the module
//     github.com/prometheus-operator/prometheus-operator at prometheusOperatorVersion.
//
// Run from the repository's root: go run deploy/helm/schemas/generate.go [-out DIR]
// (.ci/deploy runs it into a scratch directory and fails when the committed files differ).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"
)

const (
	kubernetesVersion         = "v1.37.2"
	prometheusOperatorVersion = "v0.85.0"
)

// kinds are the built-in kinds the chart renders, by their OpenAPI definition.
var kinds = []string{
	"io.k8s.api.apps.v1.Deployment",
	"io.k8s.api.core.v1.Service",
	"io.k8s.api.core.v1.PersistentVolumeClaim",
	"io.k8s.api.core.v1.Secret",
	"io.k8s.api.policy.v1.PodDisruptionBudget",
}

func main() {
	out := flag.String("out", "deploy/helm/schemas", "directory to write the schemas into")
	flag.Parse()
	if err := run(*out); err != nil {
		fmt.Fprintln(os.Stderr, "generate:", err)
		os.Exit(1)
	}
}

func run(out string) error {
	k8s, err := moduleDir("k8s.io/kubernetes", kubernetesVersion)
	if err != nil {
		return err
	}
	var spec struct {
		Definitions map[string]map[string]any `json:"definitions"`
	}
	if err := readJSON(filepath.Join(k8s, "api/openapi-spec/swagger.json"), &spec); err != nil {
		return err
	}
	for _, name := range kinds {
		def, ok := spec.Definitions[name]
		if !ok {
			return fmt.Errorf("swagger.json has no definition %s", name)
		}
		gvk := def["x-kubernetes-group-version-kind"].([]any)[0].(map[string]any)
		group, version, kind := gvk["group"].(string), gvk["version"].(string), gvk["kind"].(string)
		schema, err := resolve(def, spec.Definitions, map[string]bool{name: true})
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		pinKind(schema.(map[string]any), group, version, kind)
		if err := write(out, kind, group, version, schema); err != nil {
			return err
		}
	}

	promOp, err := moduleDir("github.com/prometheus-operator/prometheus-operator", prometheusOperatorVersion)
	if err != nil {
		return err
	}
	crd, err := crdSchema(filepath.Join(promOp, "example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml"), "v1")
	if err != nil {
		return err
	}
	schema, err := resolve(crd, nil, nil)
	if err != nil {
		return fmt.Errorf("ServiceMonitor: %w", err)
	}
	pinKind(schema.(map[string]any), "monitoring.coreos.com", "v1", "ServiceMonitor")
	return write(out, "ServiceMonitor", "monitoring.coreos.com", "v1", schema)
}

// moduleDir downloads module@version into the module cache, when it is not there yet, and
// returns its directory.
func moduleDir(module, version string) (string, error) {
	cmd := exec.Command("go", "mod", "download", "-json", module+"@"+version)
	cmd.Stderr = os.Stderr
	b, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go mod download %s@%s: %w", module, version, err)
	}
	var m struct{ Dir, Error string }
	if err := json.Unmarshal(b, &m); err != nil {
		return "", fmt.Errorf("go mod download %s@%s: %w", module, version, err)
	}
	if m.Error != "" || m.Dir == "" {
		return "", fmt.Errorf("go mod download %s@%s: %s", module, version, m.Error)
	}
	return m.Dir, nil
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// crdSchema is the openAPIV3Schema of version of the CustomResourceDefinition in path.
func crdSchema(path, version string) (map[string]any, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var crd struct {
		Spec struct {
			Versions []struct {
				Name   string `yaml:"name"`
				Schema struct {
					OpenAPIV3Schema map[string]any `yaml:"openAPIV3Schema"`
				} `yaml:"schema"`
			} `yaml:"versions"`
		} `yaml:"spec"`
	}
	if err := yaml.Unmarshal(b, &crd); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for _, v := range crd.Spec.Versions {
		if v.Name == version {
			return v.Schema.OpenAPIV3Schema, nil
		}
	}
	return nil, fmt.Errorf("%s: no version %s", path, version)
}

// resolve converts an OpenAPI schema into a standalone, strict JSON schema: references to defs
// are inlined (seen holds the ones being inlined, to refuse a cycle), descriptions and the
// x-kubernetes- extensions are dropped, an int-or-string takes a string or an integer and a
// quantity a string or a number, and an object with properties allows no others unless it says it keeps unknown
// fields.
func resolve(v any, defs map[string]map[string]any, seen map[string]bool) (any, error) {
	switch v := v.(type) {
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			r, err := resolve(e, defs, seen)
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	case map[string]any:
		return resolveObject(v, defs, seen)
	}
	return v, nil
}

// quantity is the definition of a resource quantity ("100m", "1Gi"), a string in the OpenAPI
// document that YAML may also write as a plain number (cpu: 2).
const quantity = "io.k8s.apimachinery.pkg.api.resource.Quantity"

func oneOf(types ...string) map[string]any {
	alts := make([]any, len(types))
	for i, t := range types {
		alts[i] = map[string]any{"type": t}
	}
	return map[string]any{"oneOf": alts}
}

func resolveObject(v map[string]any, defs map[string]map[string]any, seen map[string]bool) (any, error) {
	if ref, ok := v["$ref"].(string); ok {
		name := strings.TrimPrefix(ref, "#/definitions/")
		def, ok := defs[name]
		if !ok {
			return nil, fmt.Errorf("unknown reference %s", ref)
		}
		if name == quantity {
			return oneOf("string", "number"), nil
		}
		if seen[name] {
			return nil, fmt.Errorf("a cycle through %s", name)
		}
		seen[name] = true
		defer delete(seen, name)
		return resolve(def, defs, seen)
	}
	if v["format"] == "int-or-string" || v["x-kubernetes-int-or-string"] == true {
		return oneOf("string", "integer"), nil
	}
	out := map[string]any{}
	for k, e := range v {
		if k == "description" || strings.HasPrefix(k, "x-kubernetes-") {
			continue
		}
		if k == "properties" {
			// A map of field names, not a schema: resolve each field's schema.
			props := map[string]any{}
			for name, p := range e.(map[string]any) {
				r, err := resolve(p, defs, seen)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", name, err)
				}
				props[name] = r
			}
			out[k] = props
			continue
		}
		r, err := resolve(e, defs, seen)
		if err != nil {
			return nil, err
		}
		out[k] = r
	}
	_, hasProps := out["properties"]
	_, hasAdditional := out["additionalProperties"]
	if hasProps && !hasAdditional && v["x-kubernetes-preserve-unknown-fields"] != true {
		out["additionalProperties"] = false
	}
	return out, nil
}

// pinKind makes apiVersion and kind required and the kind's own.
func pinKind(schema map[string]any, group, version, kind string) {
	apiVersion := version
	if group != "" {
		apiVersion = group + "/" + version
	}
	props := schema["properties"].(map[string]any)
	props["apiVersion"] = map[string]any{"type": "string", "enum": []any{apiVersion}}
	props["kind"] = map[string]any{"type": "string", "enum": []any{kind}}
	required, _ := schema["required"].([]any)
	for _, f := range []string{"apiVersion", "kind"} {
		if !contains(required, f) {
			required = append(required, f)
		}
	}
	schema["required"] = required
}

func contains(list []any, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

// write writes schema where kubeconform's -schema-location template
// {{.ResourceKind}}{{.KindSuffix}}.json finds it: deployment-apps-v1.json, service-v1.json,
// servicemonitor-monitoring-v1.json (the first part of the group only).
func write(dir, kind, group, version string, schema any) error {
	name := strings.ToLower(kind)
	if group != "" {
		name += "-" + strings.Split(group, ".")[0]
	}
	name += "-" + version + ".json"
	b, err := json.MarshalIndent(schema, "", " ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, name), append(b, '\n'), 0o644)
}
