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

// Functions
//
// Every function of the schema is written out once, in one file of
// functions/ (claim.sql; claim_compat.sql, the claim signatures older
// builds call; enroll.sql, both enroll signatures; schedules.sql,
// write_schedules; renew.sql), and applied from there, CREATE OR
// REPLACE, whenever the schema lacks the file's text: migrations never
// hold a function's text. Each file begins with its version, "-- version
// N", raised with every change of its text. The comment of each function
// a file creates records the file, its version and the SHA-256 of the
// text applied ("slotcron functions/claim.sql version 1 sha256 …"), set
// by COMMENT ON FUNCTION in the transaction that applies the file (an
// argument list therefore holds no DEFAULT: the comment names the
// signature). In the same locked transaction as the migrations, after them, a file is applied
// when the schema has no record of it (a new file, or a schema a build
// from before the record created, whose functions its migrations wrote)
// or records an older version. A newer version recorded was applied by a
// newer build and is left as it is: an older build never replaces a newer
// text, also when it starts after the newer one. The same version with
// another text is refused, and New fails: a text changed without its
// version (TestFunctionVersions keeps every version's hash, so such a
// change fails the tests first). A schema at any earlier version N thus
// upgrades by the migrations after N, then the function texts, and ends as
// a schema this build creates (TestUpgradeCatalog, TestUpgradeConformance).
//
// A rolling upgrade runs replicas of the previous build beside the new
// one. They call the functions by name with their own argument lists, and
// from the commit that applies a new text their calls run it; a call that
// began before runs the old text to its end. So every new text of a file
// must, for as long as a build that calls it may run:
//
//   - keep callable every signature such a build calls, with the result it
//     reads: a changed argument list is a new function beside the old one,
//     which stays (claim_compat.sql keeps the claims of the builds of
//     versions 3 to 6, of 8 and 9 and of 10 to 12 as calls of today's
//     with backfill false, no spec and no NotAfter, as each lacks them;
//     enroll.sql keeps enroll(jobs, now)), unless
//     the old behaviour would break a guarantee: version 2's claim, which
//     never checked generations, is dropped, so a replica of that build
//     gets errors from its claims and claims nothing (it still renews and
//     finishes the runs it holds);
//   - answer such a build's calls as its own text did, or as the contract
//     lets it see (a new argument's old callers get the old behaviour);
//   - take its locks in the order every text takes them (a claim: the
//     fence rows of its batch's jobs, in job order, then their catalog
//     rows and generation rows, before any marker; an enroll: catalog
//     rows, then generation rows; a write of schedules: schedule_head,
//     then catalog rows, then generation rows), so calls of the old and the new text
//     take turns per job and fences still grow; a generation row this cluster wrote is read without a
//     lock only because no text ever rewrites one;
//   - need no table or column the schema lacks: a text that needs one
//     comes with the migration that adds it, applied in the same
//     transaction. Such a migration raises the schema version, and a
//     replica of the previous build then refuses to start (it still runs
//     if started); a change of function texts alone keeps the schema
//     version, and a replica of the previous build starts as before. A
//     migration that adds to the claim's row type (versions 3 and 9) fails
//     a claim of the old text in flight while it runs (its row no longer
//     casts to the type); the replica retries it as any failed claim.
//
// TestRollingUpgrade shows replicas of the previous build and of the
// builds of versions 6 and 8 claiming, with those builds' own statements,
// before, while and after this build applies its texts, beside this
// build's store: one winner per slot, and fences that grow.
//
// What each schema version changed: 2 added the claim; 3 generations and
// incarnations, the enroll and renew functions, and dropped version 2's
// claim; 4 a claim's NotBefore; 5 the set-based claim of fresh slots; 6 a
// claim that looks locks no marker (version 5's look locked the running
// markers it read and, when it had to write after all, took the other
// fence rows still holding them: it could deadlock with a claim holding
// one of those fence rows); 7 the pause's note, with defaults, and the
// replicas table (a replica of version 6's build pauses and resumes as
// before, its pauses with no note); 8 backfill claims, a claim with one
// argument more, beside the one version 6's build calls (versions 7 and 8
// shipped together); 9 the mark of a slot a backfill won (markers.backfill,
// and the claim's rows with it); 10 the catalog (the catalog table, the
// enroll that offers specs, a claim with one argument more, p_spec, whose
// rows say superseded; the previous build's claim, of one argument less,
// is now a call of it that names no spec, in claim_compat.sql); 11
// schedules held as data (the catalog's run, version, seq and deleted, their
// indexes, schedule_head, the write_schedules function, and an enroll that
// leaves a live schedule's row alone: a replica of version 10's build still
// running enrolls through it, and sees a schedule's spec in force as any
// spec it does not carry); 12 the actions table. Versions
// 4, 5, 6 and 8 changed functions alone: their
// migrations now change nothing, and today's texts stand in functions/.
// A change of function texts alone raises no schema version: a claim's
// NotAfter (claim.sql version 6, a claim with one argument more,
// p_not_after; the claim of one argument less, which the builds of
// versions 10 to 12 from before it call, is now a call of it with no
// NotAfter, in claim_compat.sql version 3) came within version 12, and so
// did generations that cover slots from slotstore.ClaimLead after they
// began (claim.sql version 7, the same signatures: replicas of earlier
// builds calling it skip for data loss a few more slots just after a loss,
// which is only more cautious).
//
// The store takes three advisory lock keys per schema, hashed from its
// name: for migrations, for pruning, for appends to the actions log.
//
// Connections must run at READ COMMITTED, the server's default; Open sets
// it for the pool it opens, and the claim function refuses any other
// level. Package leader/pgleader elects one replica at a time, for
// users' own singleton work.

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
// text must keep are above, under Functions.
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
