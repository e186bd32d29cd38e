// Package crds holds the custom resource definitions of Paddock's Agent
// and Session resources (paddock.dev/v1alpha1), apart from the
// controller, so `paddock kube crds` prints them without linking it.
package crds

import _ "embed"

// YAML is the definitions, as `paddock kube crds` prints them for
// `kubectl apply -f -`.
//
//go:embed crds.yaml
var YAML []byte
