// policy-check FILE: decodes each ClusterImagePolicy in FILE (YAML documents separated by ---;
// strict: an unknown field is an error) and runs sigstore policy-controller's own defaulting and
// validation on it, as its admission webhook does (tests/supply_chain.rs). Prints one line per
// policy, "valid: NAME" or "invalid: NAME: why"; exits 1 when any is invalid, 2 on bad usage.
package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/sigstore/policy-controller/pkg/apis/policy/v1beta1"
	"sigs.k8s.io/yaml"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: policy-check FILE")
		os.Exit(2)
	}
	data, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	failed := false
	for i, doc := range strings.Split(string(data), "\n---\n") {
		var cip v1beta1.ClusterImagePolicy
		if err := yaml.UnmarshalStrict([]byte(doc), &cip); err != nil {
			fmt.Printf("invalid: document %d: %v\n", i+1, err)
			failed = true
			continue
		}
		if cip.Kind != "ClusterImagePolicy" || cip.APIVersion != "policy.sigstore.dev/v1beta1" {
			fmt.Printf("invalid: document %d: %s %s is not a policy.sigstore.dev/v1beta1 ClusterImagePolicy\n", i+1, cip.APIVersion, cip.Kind)
			failed = true
			continue
		}
		ctx := context.Background()
		cip.SetDefaults(ctx)
		if ferr := cip.Validate(ctx); ferr != nil {
			fmt.Printf("invalid: %s: %s\n", cip.Name, strings.ReplaceAll(ferr.Error(), "\n", " "))
			failed = true
			continue
		}
		fmt.Printf("valid: %s\n", cip.Name)
	}
	if failed {
		os.Exit(1)
	}
}
