package access

import (
	"context"
	"testing"
)

func TestScopeSeesRunsByTheirFlowName(t *testing.T) {
	cases := []struct {
		flows   []string
		name    string
		hasName bool
		sees    bool
	}{
		{[]string{"*"}, "billing", true, true},
		{[]string{"*"}, "", false, true},
		{[]string{"billing-*"}, "billing-refund", true, true},
		{[]string{"billing-*"}, "billing", true, false},
		{[]string{"billing-*"}, "", false, false},
		{[]string{"billing"}, "billing", true, true},
		{[]string{"billing"}, "billing-refund", true, false},
		{nil, "billing", true, false},
		{[]string{}, "billing", true, false},
		{[]string{"a*", "ab*", "abc"}, "abcd", true, true},
		{[]string{"x", "y*"}, "y", true, true},
		{[]string{"x", "y*"}, "z", true, false},
	}
	for _, c := range cases {
		p := &Principal{Name: "p", Flows: c.flows}
		if got := p.Scope().Sees(c.name, c.hasName); got != c.sees {
			t.Errorf("flows %q, run %q (named %v): sees %v, want %v", c.flows, c.name, c.hasName, got, c.sees)
		}
	}
}

func TestScopeIsNormalised(t *testing.T) {
	s := (&Principal{Flows: []string{"b", "a*", "ab*", "abc", "b", "c"}}).Scope()
	if len(s.Prefixes) != 1 || s.Prefixes[0] != "a" {
		t.Errorf("prefixes %q, want [a]", s.Prefixes)
	}
	if len(s.Exact) != 2 || s.Exact[0] != "b" || s.Exact[1] != "c" {
		t.Errorf("exact %q, want [b c]", s.Exact)
	}
	same := (&Principal{Flows: []string{"c", "a*", "b"}}).Scope()
	if s.Key() != same.Key() {
		t.Error("two scopes that see the same runs have different keys")
	}
	other := (&Principal{Flows: []string{"c", "a*"}}).Scope()
	if s.Key() == other.Key() {
		t.Error("two scopes that see different runs share a key")
	}
	if !(&Principal{}).Scope().None() || s.None() {
		t.Error("None is wrong")
	}
	if (&Principal{Flows: []string{"x", "*"}}).Scope().Key() != "" {
		t.Error("the scope of every run has a key; cursors bound before access control would break")
	}
}

func TestPrincipalKeySeparatesAnswers(t *testing.T) {
	a := &Principal{Name: "a", Flows: []string{"x"}}
	b := &Principal{Name: "b", Flows: []string{"x"}}
	a2 := &Principal{Name: "a", Flows: []string{"x"}, Payloads: true}
	if a.Key() == b.Key() || a.Key() == a2.Key() || a.Key() == "" {
		t.Errorf("keys collide: %q %q %q", a.Key(), b.Key(), a2.Key())
	}
	if Everyone.Key() != "" {
		t.Error("the anonymous principal has a key")
	}
}

func TestContextCarriesThePrincipal(t *testing.T) {
	if FromContext(context.Background()) != Everyone {
		t.Error("a context without a principal is not Everyone's")
	}
	p := &Principal{Name: "p"}
	if FromContext(NewContext(context.Background(), p)) != p {
		t.Error("the principal put in is not the one taken out")
	}
}
