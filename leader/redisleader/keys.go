package redisleader

import "strings"

// The keys of one name carry it as their Cluster hash tag, so the lease and
// the fence counter live in one hash slot and one script can use both:
//
//	<prefix>leader:{<name>}:lease     hash    holder (h) and fence (f); expires with the lease
//	<prefix>leader:{<name>}:fence     string  the last fence issued; never expires
//	<prefix>leader:{<name>}:released  channel a message each time a leader releases
//
// "leader:" keeps them apart from the slot store's keys under the same
// prefix. The name is escaped so that it holds no brace (which would end or
// empty the hash tag) and no two names share keys.
type keys struct {
	lease, fence, channel string
}

func keysOf(prefix, name string) keys {
	tag := prefix + "leader:{" + escaper.Replace(name) + "}:"
	return keys{lease: tag + "lease", fence: tag + "fence", channel: tag + "released"}
}

var escaper = strings.NewReplacer("%", "%25", "{", "%7B", "}", "%7D")
