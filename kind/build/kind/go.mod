module gatewitness.local/kind/build/kind

go 1.26.8

require sigs.k8s.io/kind v0.33.0
