package pgstore

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"path"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5"
)

// functionFiles holds the schema's functions, each in one source file,
// functions/NAME.sql, whose first line is "-- version N". migrate applies
// a file (CREATE OR REPLACE) when the schema has no record of it or an
// older version. The record is the comment of every function the file
// creates (COMMENT ON FUNCTION, set in the transaction that applies the
// file): "slotcron functions/NAME.sql version N sha256 HEX", the SHA-256
// of the text applied. The catalogs that hold comments are readable by
// every role, so a role with no privilege beyond the tables' can tell that
// there is nothing to do. Change a file's text and raise its version with
// it (TestFunctionVersions records each version's hash); the rules a new
// text must keep are in the package documentation, under Functions.
// {schema} in a file stands for the store's quoted schema name; an
// argument list holds no DEFAULT (its comment names the signature).
//
//go:embed functions/*.sql
var functionFiles embed.FS

// functionOrder is the order in which the files are applied: a file after
// those whose functions it calls (a LANGUAGE sql function is checked
// against them when it is created).
var functionOrder = []string{"enroll", "schedules", "renew", "claim", "claim_compat"}

// function is the text of one function file.
type function struct {
	name    string // the file's name, less .sql
	version int
	sql     string
	hash    string   // hex SHA-256 of sql
	creates []string // the functions it creates: name(arguments), less the schema
}

// comment is the record of f that migrate sets on each function f creates.
func (f function) comment() string {
	return fmt.Sprintf("%s%s.sql version %d sha256 %s", commentPrefix, f.name, f.version, f.hash)
}

// commentPrefix begins the comment that records a function file.
const commentPrefix = "slotcron functions/"

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
		creates, err := createdFunctions(sql)
		if err != nil {
			panic("pgstore: function file " + name + ".sql: " + err.Error())
		}
		sum := sha256.Sum256([]byte(sql))
		out = append(out, function{name: name, version: v, sql: sql, hash: hex.EncodeToString(sum[:]), creates: creates})
	}
	return out
}

// applied is what the comments record of a function file.
type applied struct {
	version int
	hash    string
}

// readFunctions returns, by file name, the records the comments of
// schema's functions hold (none for a function with no such comment: one a
// build from before the comments created). A file's record is the highest
// version one of its functions carries. It reads only pg_proc and
// pg_description, which need no privilege.
func readFunctions(ctx context.Context, tx pgx.Tx, schema string) (map[string]applied, error) {
	rows, err := tx.Query(ctx, `SELECT d.description FROM pg_catalog.pg_proc p
		JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
		JOIN pg_catalog.pg_description d ON d.objoid = p.oid AND d.classoid = 'pg_catalog.pg_proc'::regclass AND d.objsubid = 0
		WHERE n.nspname = $1 AND starts_with(d.description, $2)
		ORDER BY d.description`, schema, commentPrefix)
	if err != nil {
		return nil, err
	}
	comments, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	out := map[string]applied{}
	for _, c := range comments {
		var (
			file string
			a    applied
		)
		if _, err := fmt.Sscanf(strings.TrimPrefix(c, commentPrefix), "%s version %d sha256 %s", &file, &a.version, &a.hash); err != nil {
			return nil, fmt.Errorf("function comment %q: %w", c, err)
		}
		name := strings.TrimSuffix(file, ".sql")
		if have, ok := out[name]; !ok || a.version > have.version {
			out[name] = a
		}
	}
	return out, nil
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
				"its text changed without its version; raise the version on the file's first line past %d (and record its hash in "+
				"functionHashes) and build again; a version whose text a build that was rolled back applied is spent, never reused",
				f.name, f.version, a.hash, f.hash, f.version)
		}
	}
	return todo, nil
}

// applyFunctions creates or replaces the functions of todo and records
// each file in the comments of the functions it creates, in tx.
func applyFunctions(ctx context.Context, tx pgx.Tx, q string, todo []function) error {
	for _, f := range todo {
		if _, err := tx.Exec(ctx, strings.ReplaceAll(f.sql, "{schema}", q)); err != nil {
			return fmt.Errorf("apply functions/%s.sql version %d: %w", f.name, f.version, err)
		}
		for _, sig := range f.creates {
			// COMMENT takes no parameters: the comment is a quoted literal.
			sql := "COMMENT ON FUNCTION " + q + "." + sig + " IS '" + strings.ReplaceAll(f.comment(), "'", "''") + "'"
			if _, err := tx.Exec(ctx, sql); err != nil {
				return fmt.Errorf("record functions/%s.sql version %d on %s: %w", f.name, f.version, sig, err)
			}
		}
	}
	return nil
}

// createStatement begins, at the start of a line, a statement of a
// function file that creates a function; its first group is the name.
var createStatement = regexp.MustCompile(`(?m)^CREATE OR REPLACE FUNCTION \{schema\}\.(\w+)\(`)

// createdFunctions returns the functions that the text of a function file
// creates, each as name(arguments) with the arguments' comments left out
// and their spaces collapsed: what COMMENT ON FUNCTION names it by.
func createdFunctions(sql string) ([]string, error) {
	var out []string
	for _, m := range createStatement.FindAllStringSubmatchIndex(sql, -1) {
		var args strings.Builder
		depth, i := 1, m[1]
		for ; i < len(sql) && depth > 0; i++ {
			switch c := sql[i]; {
			case strings.HasPrefix(sql[i:], "--"):
				i += strings.IndexByte(sql[i:]+"\n", '\n') // to the line's end
				args.WriteByte(' ')
				continue
			case c == '(':
				depth++
			case c == ')':
				depth--
			}
			if depth > 0 {
				args.WriteByte(sql[i])
			}
		}
		name := sql[m[2]:m[3]]
		if depth > 0 {
			return nil, fmt.Errorf("the arguments of %s do not end", name)
		}
		list := strings.Join(strings.Fields(args.String()), " ")
		if strings.Contains(strings.ToUpper(list), "DEFAULT") || strings.Contains(list, "=") {
			return nil, fmt.Errorf("%s has an argument with a default: COMMENT ON FUNCTION cannot name it", name)
		}
		out = append(out, name+"("+list+")")
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("creates no function (a line beginning CREATE OR REPLACE FUNCTION {schema}.NAME()")
	}
	return out, nil
}
