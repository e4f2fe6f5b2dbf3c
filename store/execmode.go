package store

import (
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ExecModes are the values of Options.PGExecMode, pgx's query exec modes.
// cache_statement (pgx's default) prepares each statement once per
// connection; behind PgBouncer in transaction pooling mode, where one
// client connection is served by many server connections, such statements
// break, and describe_exec, exec or simple_protocol are the modes that work.
var ExecModes = []string{"cache_statement", "cache_describe", "describe_exec", "exec", "simple_protocol"}

var execModes = map[string]pgx.QueryExecMode{
	"cache_statement": pgx.QueryExecModeCacheStatement,
	"cache_describe":  pgx.QueryExecModeCacheDescribe,
	"describe_exec":   pgx.QueryExecModeDescribeExec,
	"exec":            pgx.QueryExecModeExec,
	"simple_protocol": pgx.QueryExecModeSimpleProtocol,
}

// setExecMode applies mode to cfg; empty leaves the DSN's choice.
func setExecMode(cfg *pgxpool.Config, mode string) error {
	if mode == "" {
		return nil
	}
	m, ok := execModes[mode]
	if !ok {
		return fmt.Errorf("unknown PostgreSQL exec mode %q: use one of %s", mode, strings.Join(ExecModes, ", "))
	}
	cfg.ConnConfig.DefaultQueryExecMode = m
	return nil
}

// preparesOnce reports whether cfg keeps statements prepared on the server
// across executions, where a generic plan pays off. Other modes plan every
// execution anyway, and a connection pooler may refuse the startup
// parameter that asks for generic plans.
func preparesOnce(cfg *pgxpool.Config) bool {
	return cfg.ConnConfig.DefaultQueryExecMode == pgx.QueryExecModeCacheStatement
}

// HasStandbys reports whether the store's kind of database has hot
// standbys a reader can be sent to: PostgreSQL does, SQLite does not.
func (db *DB) HasStandbys() bool { return db.dialect == Postgres }
