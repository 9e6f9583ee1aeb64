// Package rules is the slot store contract in Go, for the backends that
// implement it: not for users. It holds the claim decision table (Decide,
// Effective, Apply, Supersede, ApplySkip), the checks and defaults every
// request goes through before a backend touches its state
// (NormalizeClaims, NormalizeSkips, ValidateRef...), the reasons a store
// records that callers need not compare, and the constructor of the
// outcome-unknown error.
//
// The rules themselves are stated once, in the slotstore package
// documentation. Backends that keep their logic in Go (memstore,
// sqlitestore) call Decide and Apply inside their atomic section; those that
// cannot (redisstore's Lua, pgstore's SQL) encode the same table, and
// difftest and storetest check them against it.
package rules
