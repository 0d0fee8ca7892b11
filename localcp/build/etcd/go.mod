module gatewitness.local/localcp/build/etcd

go 1.26.8

require go.etcd.io/etcd/server/v3 v3.6.16
