package etcdleader

import (
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/slotcron/slotcron/leader/driver"
)

// NewDriver returns the driver.Driver that New builds its Elector on, for
// the tests that call sessions directly.
func NewDriver(c *clientv3.Client, o Options) (driver.Driver, error) {
	d, err := newBackend(c, o)
	if err != nil {
		return nil, err
	}
	return d, nil
}
