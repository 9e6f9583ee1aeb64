package main

import (
	"bufio"
	"os"
	"strings"
)

// layoutFile holds the Layout: its first fenced block lists one directory
// a line, its path (ending in "/") first.
const layoutFile = "docs/layout.md"

// checkLayout reports a package the Layout does not list, and a directory
// it lists that does not exist.
func checkLayout(m *module, p *problems) {
	listed, err := readLayout()
	if err != nil {
		p.add("%s: %v", layoutFile, err)
		return
	}
	for dir, line := range listed {
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			p.add("%s:%d lists %s/, which is not a directory: remove it or fix the path", layoutFile, line, dir)
		}
	}
	for _, pk := range m.pkgs {
		if _, ok := listed[pk.dir]; !ok && pk.dir != "." {
			p.add("%s does not list package %s/: add a line saying what it is", layoutFile, pk.dir)
		}
	}
}

// readLayout returns the directories of the Layout block, each with its
// line in the file.
func readLayout() (map[string]int, error) {
	f, err := os.Open(layoutFile)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	dirs := map[string]int{}
	in, done := false, false
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan() && !done; n++ {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "```"):
			done = in
			in = !in
		case in:
			fields := strings.Fields(line)
			if len(fields) > 0 && strings.HasSuffix(fields[0], "/") {
				dirs[strings.TrimSuffix(fields[0], "/")] = n
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(dirs) == 0 {
		return nil, errNoBlock
	}
	return dirs, nil
}

type textError string

func (e textError) Error() string { return string(e) }

const errNoBlock = textError("no fenced block listing directories (lines starting with a path ending in /)")
