package pgstore

import (
	"slices"
	"strings"
	"testing"
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
		"85ab037505e8cb6d44535a1d1f9d06d6c04cffa0a4b4ac9a8546c7996b228197"},
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
