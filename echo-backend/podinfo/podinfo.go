// Package podinfo describes where an echo-backend runs, as echo-basic does:
// the namespace, ingress, service and pod names from the environment.
package podinfo

import "os"

// Info is echoed back in every response.
type Info struct {
	Namespace string `json:"namespace"`
	Ingress   string `json:"ingress"`
	Service   string `json:"service"`
	Pod       string `json:"pod"`
}

// FromEnv reads NAMESPACE, INGRESS_NAME, SERVICE_NAME and POD_NAME.
func FromEnv() Info {
	return Info{
		Namespace: os.Getenv("NAMESPACE"),
		Ingress:   os.Getenv("INGRESS_NAME"),
		Service:   os.Getenv("SERVICE_NAME"),
		Pod:       os.Getenv("POD_NAME"),
	}
}
