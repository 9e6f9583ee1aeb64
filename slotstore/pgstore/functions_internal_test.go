package pgstore

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slotcron/slotcron/slotstore"
)

// functionHashes records the SHA-256 of every version of each function
// file, oldest first: version N's is the Nth. A change to a file's text
// fails TestFunctionVersions until its version is raised and the new
// text's hash appended here, so that no two builds apply different texts
// under one version, and a hash once released stays what it was.
var functionHashes = map[string][]string{
	"enroll": {"04736ba9d42b84ad4577f4936f0f00da39479ec455c4700697c1a783a6ca1cad", "f93031a7758a1a220d5411e0817d40308fc15c351a443f50ac842674dfc54903",
		"298692962542ced463bc52287af63f2065fb1c23d38d0149753601c224a019d8",
		"7863944a33e0d5795ce3ee45731d935610a93c781ec2a477cd758d7ba7a58189",
		"b41077a5a57d2ac37e4327daecd6b88093d38379a0c4243d1039a34137c1fa78"},
	"schedules": {"58c6fcf0f8252d069e2e4223c4a70eec4fceefae09a4758fba0049696887facb"},
	"renew":     {"0fdb9378d0d359a3398f89afe8d42213023c31037472c3e1cc2b851d9eb82930"},
	"claim": {"170ee472b0e40b01ddf44dcfb4504f8453425ba6854d65f653d3a018168656ff", "62b998a4922877f081448d0724c773425981b6bef0b10a8b5f83ddc042f54a7d", "a053d9228756146c4bd8130501dd5f6f3a72908616714a2f4752ce4e9a6aace0",
		"cf765435633b855cdbf85cc0f714589ee8df453c0a6623bdc829a3c871d3776a", "f530d4efa64373f881087ed16f61f36b06ab46421a48fd5ee797a91ccc5e82b6",
		"85ab037505e8cb6d44535a1d1f9d06d6c04cffa0a4b4ac9a8546c7996b228197",
		"a9a7bc716034f7b92bd5712f5d37b8a4fe9c7686122617ebdbdc11e5198e6bc3",
		"fde15e42229f9d79191b532ddd4654a2e028bff3065b2044df43cef3aa81045b"},
	"claim_compat": {"84617abbf4ace2fdf372cb33808003f823e163d75ecfa630e61a8b4c64f8c4cb", "45fe141ca3b8c577fc90d450cd043fa2e6f956234d30bf6a9ebf15c8b99620f2",
		"f214381f4a8f6cd9de5009683395aa4cd4177de6a70112ab8db1d30db2533c93"},
}

func TestFunctionVersions(t *testing.T) {
	if len(functionHashes) != len(functions) {
		t.Errorf("hashes recorded for %d function files, want %d", len(functionHashes), len(functions))
	}
	for _, f := range functions {
		hashes := functionHashes[f.name]
		switch {
		case f.version > len(hashes)+1 || f.version < len(hashes):
			t.Errorf("functions/%s.sql: version %d, and %d versions recorded", f.name, f.version, len(hashes))
		case f.version == len(hashes)+1:
			t.Errorf("functions/%s.sql: version %d is new: append its hash %s to functionHashes", f.name, f.version, f.hash)
		case hashes[f.version-1] != f.hash:
			t.Errorf("functions/%s.sql changed (sha256 %s): raise its version to %d and append the hash to functionHashes",
				f.name, f.hash, len(hashes)+1)
		}
	}
}

// TestClaimLeadPinned: the claim function's v_lead, the time after a
// generation began from which it covers slots, is slotstore.ClaimLead, and
// every comparison of a slot with born in the function adds it (a claim's
// first marker, on the set-based path and one by one, and a backfill's win
// of a skipped slot). A change of ClaimLead fails here until claim.sql's
// constant, and so its version, follows.
func TestClaimLeadPinned(t *testing.T) {
	claim := functions[slices.IndexFunc(functions, func(f function) bool { return f.name == "claim" })]
	decl := regexp.MustCompile(`(?m)^\s*v_lead\s+CONSTANT\s+interval\s*:=\s*interval\s+'([^']*)'\s*;`).
		FindAllStringSubmatch(claim.sql, -1)
	if len(decl) != 1 {
		t.Fatalf("functions/claim.sql declares v_lead CONSTANT interval %d times, want once", len(decl))
	}
	if lead, err := sqlInterval(decl[0][1]); err != nil || lead != slotstore.ClaimLead {
		t.Errorf("functions/claim.sql: v_lead is interval '%s' (%v, %v), want slotstore.ClaimLead, %v",
			decl[0][1], lead, err, slotstore.ClaimLead)
	}
	cmp := regexp.MustCompile(`slot(?:\[i\])?\s*(?:<|>=)\s*(?:r\.born|v_b)\b(\s*\+\s*v_lead\b)?`).
		FindAllStringSubmatch(claim.sql, -1)
	if len(cmp) != 3 {
		t.Errorf("functions/claim.sql compares a slot with born %d times, want 3: %q", len(cmp), cmp)
	}
	for _, c := range cmp {
		if c[1] == "" {
			t.Errorf("functions/claim.sql: %q compares a slot with born, not with born + v_lead", c[0])
		}
	}
}

// sqlInterval reads an interval literal of one unit, "N second(s)",
// "N millisecond(s)" or "N microsecond(s)".
func sqlInterval(lit string) (time.Duration, error) {
	f := strings.Fields(lit)
	if len(f) != 2 {
		return 0, strconv.ErrSyntax
	}
	n, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return 0, err
	}
	unit, ok := map[string]time.Duration{"second": time.Second, "millisecond": time.Millisecond,
		"microsecond": time.Microsecond}[strings.TrimSuffix(f[1], "s")]
	if !ok {
		return 0, strconv.ErrSyntax
	}
	return time.Duration(n) * unit, nil
}

// TestFunctionsNeverDowngraded: a function file that a newer build applied
// (its recorded version above this build's) is left as that build wrote
// it; one recorded at this build's version with another text is an error
// that changes nothing; and one recorded at an older version is replaced
// by this build's text.
func TestFunctionsNeverDowngraded(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := internalStore(t, "newerfn")
	q := quote(s.schema)
	renew := functions[slices.IndexFunc(functions, func(f function) bool { return f.name == "renew" })]
	newer := strings.Replace(renew.sql, "BEGIN", "BEGIN\n    -- a newer build's text", 1)
	if _, err := s.pool.Exec(ctx, strings.ReplaceAll(newer, "{schema}", q)); err != nil {
		t.Fatal(err)
	}
	record(t, s, renew, renew.version+1, "newer")
	renewText := func() string {
		t.Helper()
		var src string
		if err := s.pool.QueryRow(ctx, "SELECT prosrc FROM pg_proc WHERE oid = $1::regproc", q+".renew").Scan(&src); err != nil {
			t.Fatal(err)
		}
		return src
	}
	if err := s.migrate(ctx); err != nil {
		t.Fatalf("migrate under a newer build's renew: %v", err)
	}
	if !strings.Contains(renewText(), "a newer build's text") {
		t.Error("an older build replaced a newer build's renew")
	}

	record(t, s, renew, renew.version, "newer")
	err := s.migrate(ctx)
	if err == nil || !strings.Contains(err.Error(), "changed without its version") || !strings.Contains(err.Error(), "raise the version") {
		t.Errorf("migrate with another text of renew's version %d recorded: %v", renew.version, err)
	}
	if !strings.Contains(renewText(), "a newer build's text") {
		t.Error("a failed migration replaced renew")
	}

	// An older version recorded: this build's text replaces it.
	record(t, s, renew, renew.version-1, "newer")
	if err := s.migrate(ctx); err != nil {
		t.Fatalf("migrate over an older renew: %v", err)
	}
	if strings.Contains(renewText(), "a newer build's text") {
		t.Error("this build did not apply its renew over an older version")
	}
}

// record writes on the functions that f creates in s's schema the record
// of f's file at version with hash, as a build that applied it would.
func record(t *testing.T, s *Store, f function, version int, hash string) {
	t.Helper()
	g := f
	g.version, g.hash = version, hash
	for _, sig := range f.creates {
		if _, err := s.pool.Exec(t.Context(), "COMMENT ON FUNCTION "+quote(s.schema)+"."+sig+" IS '"+g.comment()+"'"); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCreatedFunctions: the signatures a function file's comments are set
// on are read from its CREATE statements, their comments left out; a file
// that creates nothing, or an argument with a default, is refused.
func TestCreatedFunctions(t *testing.T) {
	got, err := createdFunctions("-- version 1\n-- CREATE OR REPLACE FUNCTION {schema}.not_this(x int)\n" +
		"CREATE OR REPLACE FUNCTION {schema}.f(\n    a text[], -- a note (with parentheses)\n    b numeric(10, 2)\n) RETURNS int\n" +
		"LANGUAGE sql AS $$ SELECT 1 $$;\nCREATE OR REPLACE FUNCTION {schema}.g() RETURNS int LANGUAGE sql AS $$ SELECT 2 $$;\n")
	if want := []string{"f(a text[], b numeric(10, 2))", "g()"}; err != nil || !slices.Equal(got, want) {
		t.Errorf("createdFunctions: %q, %v; want %q", got, err, want)
	}
	for _, sql := range []string{
		"-- version 1\nDROP FUNCTION IF EXISTS {schema}.f(int);\n",
		"CREATE OR REPLACE FUNCTION {schema}.f(a int DEFAULT 1) RETURNS int LANGUAGE sql AS $$ SELECT a $$;\n",
		"CREATE OR REPLACE FUNCTION {schema}.f(a int -- never closed\n",
	} {
		if got, err := createdFunctions(sql); err == nil {
			t.Errorf("createdFunctions(%q) = %q; want an error", sql, got)
		}
	}
}
