module gatewitness.local/localcp/build/kwok

go 1.26.8

require sigs.k8s.io/kwok v0.8.0
