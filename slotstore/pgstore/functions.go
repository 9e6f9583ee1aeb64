package pgstore

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"path"
	"strings"

	"github.com/jackc/pgx/v5"
)

// functionFiles holds the schema's functions, each in one source file,
// functions/NAME.sql, whose first line is "-- version N". migrate applies
// a file (CREATE OR REPLACE) when the schema has no record of it or an
// older version; the record, in schema_functions, holds the version and
// the SHA-256 of the text applied. Change a file's text and raise its
// version with it (TestFunctionVersions records each version's hash); the
// rules a new text must keep are in the package documentation, under
// Functions. {schema} in a file stands for the store's quoted schema name.
//
//go:embed functions/*.sql
var functionFiles embed.FS

// functionOrder is the order in which the files are applied: a file after
// those whose functions it calls (a LANGUAGE sql function is checked
// against them when it is created).
var functionOrder = []string{"enroll", "renew", "claim", "claim_compat"}

// function is the text of one function file.
type function struct {
	name    string // the file's name, less .sql
	version int
	sql     string
	hash    string // hex SHA-256 of sql
}

// functions are the embedded function files in functionOrder; loading
// them fails only for a broken build.
var functions = mustLoadFunctions()

func mustLoadFunctions() []function {
	entries, err := functionFiles.ReadDir("functions")
	if err != nil {
		panic(err)
	}
	if len(entries) != len(functionOrder) {
		panic(fmt.Sprintf("pgstore: %d function files, and %d in functionOrder", len(entries), len(functionOrder)))
	}
	out := make([]function, 0, len(functionOrder))
	for _, name := range functionOrder {
		body, err := functionFiles.ReadFile(path.Join("functions", name+".sql"))
		if err != nil {
			panic(err)
		}
		// A checkout that turned line ends into CRLF applies, and
		// hashes, the same text.
		sql := strings.ReplaceAll(string(body), "\r\n", "\n")
		first, _, _ := strings.Cut(sql, "\n")
		var v int
		if _, err := fmt.Sscanf(first, "-- version %d", &v); err != nil || v < 1 {
			panic("pgstore: function file " + name + ".sql does not begin with -- version N")
		}
		sum := sha256.Sum256([]byte(sql))
		out = append(out, function{name: name, version: v, sql: sql, hash: hex.EncodeToString(sum[:])})
	}
	return out
}

// applied is what schema_functions records of a function file.
type applied struct {
	version int
	hash    string
}

// readFunctions returns the records of schema_functions by file name:
// none when there is no such table (a schema created by a build from
// before the table, or no schema yet).
func readFunctions(ctx context.Context, tx pgx.Tx, q string) (map[string]applied, error) {
	var exists bool
	if err := tx.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", q+".schema_functions").Scan(&exists); err != nil {
		return nil, err
	}
	out := map[string]applied{}
	if !exists {
		return out, nil
	}
	rows, err := tx.Query(ctx, "SELECT name, version, sha256 FROM "+q+".schema_functions")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			name string
			a    applied
		)
		if err := rows.Scan(&name, &a.version, &a.hash); err != nil {
			return nil, err
		}
		out[name] = a
	}
	return out, rows.Err()
}

// functionsToApply returns the files to apply over the records have: those
// with no record or an older version. A newer version was applied by a
// newer build, whose text keeps callable all that this one calls: it is
// left as it is, never replaced by an older text. The same version with
// another text means a build changed a file without raising its version:
// an error, so that neither text silently wins.
func functionsToApply(have map[string]applied) ([]function, error) {
	var todo []function
	for _, f := range functions {
		a, ok := have[f.name]
		switch {
		case !ok || a.version < f.version:
			todo = append(todo, f)
		case a.version == f.version && a.hash != f.hash:
			return nil, fmt.Errorf("function file %s.sql version %d is not the text the schema has for that version (sha256 %s, not %s): "+
				"its text changed without its version", f.name, f.version, a.hash, f.hash)
		}
	}
	return todo, nil
}

// applyFunctions creates or replaces the functions of todo and records
// them, in tx.
func applyFunctions(ctx context.Context, tx pgx.Tx, q string, todo []function) error {
	for _, f := range todo {
		if _, err := tx.Exec(ctx, strings.ReplaceAll(f.sql, "{schema}", q)); err != nil {
			return fmt.Errorf("apply functions/%s.sql version %d: %w", f.name, f.version, err)
		}
		_, err := tx.Exec(ctx, "INSERT INTO "+q+`.schema_functions AS s (name, version, sha256) VALUES ($1, $2, $3)
			ON CONFLICT (name) DO UPDATE SET version = excluded.version, sha256 = excluded.sha256, applied_at = now()`,
			f.name, f.version, f.hash)
		if err != nil {
			return fmt.Errorf("record functions/%s.sql version %d: %w", f.name, f.version, err)
		}
	}
	return nil
}
