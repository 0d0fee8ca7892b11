module gatewitness.local/kind/build/coredns

go 1.26.8

require github.com/coredns/coredns v1.14.2
