package pgleader

// LockKey is lockKey, for the tests that read pg_locks.
var LockKey = lockKey
