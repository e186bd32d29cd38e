package cli

import (
	"github.com/spf13/cobra"

	"github.com/paddock-dev/paddock/internal/kube"
)

func newKube(g *globals) *cobra.Command {
	c := &cobra.Command{Use: "kube", Short: "Kubernetes: Paddock's custom resources (the controller runs in paddock serve with PADDOCK_KUBECONFIG)"}
	c.AddCommand(&cobra.Command{
		Use:   "crds",
		Short: "Print the Agent and Session custom resource definitions: paddock kube crds | kubectl apply -f -",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			_, err := g.io.Out.Write(kube.CRDYAML())
			return err
		},
	})
	return c
}
