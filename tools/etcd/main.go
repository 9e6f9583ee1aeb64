// Command etcd is the etcd server slotcron's tests and chaos sessions run:
// etcd's own server, built from its Go module at the version of the client
// the etcd store and elector use, so a fresh machine needs no package for
// it. scripts/setup.sh builds it into bin/etcd.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
