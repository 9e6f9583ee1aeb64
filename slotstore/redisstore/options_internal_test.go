package redisstore

import (
	"testing"
	"time"
)

func TestWaitTimeoutDefault(t *testing.T) {
	for _, c := range []struct {
		o    Options
		want time.Duration
	}{
		{Options{WaitReplicas: 1}, DefaultWaitTimeout},
		{Options{WaitReplicas: 1, ReadTimeout: time.Second}, 500 * time.Millisecond},
		{Options{WaitReplicas: 2, WaitTimeout: 50 * time.Millisecond}, 50 * time.Millisecond},
		{Options{}, 0},
	} {
		o, err := c.o.validate()
		if err != nil || o.WaitTimeout != c.want {
			t.Errorf("%+v: wait timeout %v, %v; want %v", c.o, o.WaitTimeout, err, c.want)
		}
	}
}
