package store

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"strconv"
	"strings"
)

// The migration files: migrations/<dialect>/NNN_name.sql, one pair per rung
// of the ladder. A released file is never edited: a change to the schema is
// a new rung (see ARCHITECTURE.md, "Adding a migration rung").
//
// The format, which the loader checks: every statement is preceded by a
// comment line "-- <kind> <name>" naming the inventory object it creates,
// or "-- change <kind> <name>" naming an object an earlier rung created that
// it alters (ALTER TABLE, DROP and CREATE of a trigger and the like),
// and ends with a semicolon at the end of an unindented line (statements
// inside a trigger body or a function are indented, so their semicolons do
// not end the statement). Other comment lines are free text.
//
//go:embed migrations
var migrationFiles embed.FS

// ladder is a migration ladder: its rungs in order and the inventory of the
// schema they build. The package has one (theLadder); tests build others
// from their own files to climb rungs this flowsnap does not have yet.
type ladder struct {
	rungs     []migration
	inventory []Object
	version   int // the last rung's version
}

var theLadder = mustLadder(migrationFiles, migrations, inventoryRows)

// inventory is the inventory of theLadder, DDL included.
var inventory = theLadder.inventory

var (
	fileName   = regexp.MustCompile(`^(\d{3})_([a-z0-9_]+)\.sql$`)
	objectLine = regexp.MustCompile(`^-- (change )?(table|index|trigger|function) (\w+)$`)
)

func mustLadder(fsys fs.FS, rungs []migration, rows []Object) ladder {
	l, err := loadLadder(fsys, rungs, rows)
	if err != nil {
		panic("store: the embedded migrations are broken: " + err.Error())
	}
	return l
}

// loadLadder reads the migration files of both dialects under
// migrations/ in fsys and joins them with the rungs and the inventory rows
// (objects without DDL). It fails unless every rung has exactly its two
// files, every statement creates a listed object of its own rung, and every
// listed object is created in exactly the dialects it is listed for.
func loadLadder(fsys fs.FS, rungs []migration, rows []Object) (ladder, error) {
	l := ladder{rungs: rungs, inventory: append([]Object(nil), rows...)}
	index := map[string]int{}
	for i, o := range l.inventory {
		index[catalogKey(o.Kind, o.Name)] = i
	}
	byVersion := map[int]int{}
	for i, m := range rungs {
		if m.version != i+1 {
			return l, fmt.Errorf("rung %d has version %d: versions run 1, 2, 3 … without gaps", i+1, m.version)
		}
		byVersion[m.version] = i
		l.version = m.version
	}
	for _, d := range []Dialect{SQLite, Postgres} {
		dir := path.Join("migrations", string(d))
		entries, err := fs.ReadDir(fsys, dir)
		if err != nil {
			return l, err
		}
		seen := map[int]bool{}
		for _, e := range entries {
			m := fileName.FindStringSubmatch(e.Name())
			if m == nil {
				return l, fmt.Errorf("%s/%s: a migration file is named NNN_name.sql", dir, e.Name())
			}
			v, _ := strconv.Atoi(m[1])
			r, ok := byVersion[v]
			if !ok {
				return l, fmt.Errorf("%s/%s: no rung has version %d", dir, e.Name(), v)
			}
			seen[v] = true
			text, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
			if err != nil {
				return l, err
			}
			stmts, err := splitMigration(string(text))
			if err != nil {
				return l, fmt.Errorf("%s/%s: %w", dir, e.Name(), err)
			}
			for _, s := range stmts {
				i, ok := index[catalogKey(s.kind, s.name)]
				if !ok {
					return l, fmt.Errorf("%s/%s creates %s %s, which the inventory does not list", dir, e.Name(), s.kind, s.name)
				}
				o := &l.inventory[i]
				if s.change {
					if o.Since >= v {
						return l, fmt.Errorf("%s/%s changes %s %s, which an earlier rung must create", dir, e.Name(), s.kind, s.name)
					}
					continue
				}
				if o.Since != v {
					return l, fmt.Errorf("%s/%s creates %s %s, which the inventory lists for version %d", dir, e.Name(), s.kind, s.name, o.Since)
				}
				if o.DDL(d) != "" {
					return l, fmt.Errorf("%s/%s creates %s %s twice", dir, e.Name(), s.kind, s.name)
				}
				if d == Postgres {
					o.Postgres = s.ddl
				} else {
					o.SQLite = s.ddl
				}
			}
			l.rungs[r].statements = append(l.rungs[r].statements, dialectStatements{d, stmts})
		}
		for _, m := range rungs {
			if !seen[m.version] {
				return l, fmt.Errorf("%s has no file for version %d", dir, m.version)
			}
		}
	}
	for _, o := range l.inventory {
		for _, d := range []Dialect{SQLite, Postgres} {
			if o.Dialects.has(d) != o.In(d) {
				return l, fmt.Errorf("%s %s: listed for %s, but the %s files disagree", o.Kind, o.Name, o.Dialects, d)
			}
		}
	}
	return l, nil
}

// statement is one statement of a migration file and the object it creates.
type statement struct {
	change bool // it alters an object of an earlier rung
	kind   Kind
	name   string
	ddl    string // without the trailing semicolon
}

type dialectStatements struct {
	dialect Dialect
	stmts   []statement
}

// splitMigration cuts a migration file into its statements.
func splitMigration(text string) ([]statement, error) {
	var out []statement
	var cur *statement
	var body []string
	for n, line := range strings.Split(text, "\n") {
		if cur == nil {
			if m := objectLine.FindStringSubmatch(line); m != nil {
				cur = &statement{change: m[1] != "", kind: Kind(m[2]), name: m[3]}
				continue
			}
			if t := strings.TrimSpace(line); t == "" || strings.HasPrefix(t, "--") {
				continue
			}
			return nil, fmt.Errorf("line %d: a statement must follow a line \"-- <kind> <name>\"", n+1)
		}
		body = append(body, line)
		if strings.HasSuffix(line, ";") && line != "" && line[0] != ' ' && line[0] != '\t' {
			cur.ddl = strings.TrimSuffix(strings.Join(body, "\n"), ";")
			out = append(out, *cur)
			cur, body = nil, nil
		}
	}
	if cur != nil {
		return nil, fmt.Errorf("%s %s: the statement does not end with a semicolon on an unindented line", cur.kind, cur.name)
	}
	return out, nil
}

// statementsFor returns the statements of rung m in dialect d, in file order.
func (m migration) statementsFor(d Dialect) []statement {
	for _, s := range m.statements {
		if s.dialect == d {
			return s.stmts
		}
	}
	return nil
}
