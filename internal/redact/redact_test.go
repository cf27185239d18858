package redact

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestString(t *testing.T) {
	var s Set
	s.Add("s3cret-value", "${API_KEY}")
	s.Add("s3cret", "${SHORTER}")
	s.Add("abc", "${TOO_SHORT}") // below MinLen: never searched for
	s.Add("s3cret", "${SECOND}") // added twice: the first marker stays
	if s.Len() != 2 {
		t.Fatalf("%d secrets, want 2", s.Len())
	}
	for in, want := range map[string]string{
		"token=s3cret-value&x=s3cret; abc": "token=${API_KEY}&x=${SHORTER}; abc",
		"nothing to hide":                  "nothing to hide",
		"":                                 "",
	} {
		if got := s.String(in); got != want {
			t.Errorf("String(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestMarkerHoldingASecret: a marker that holds a secret is replaced by
// the fallback, and a text that cannot be cleaned is dropped.
func TestMarkerHoldingASecret(t *testing.T) {
	var s Set
	s.Add("API_KEY", "${API_KEY}")
	if got := s.String("key API_KEY here"); got != "key [redacted] here" {
		t.Errorf("String = %q", got)
	}
	var d Set
	d.Add("dacted", "x")
	d.Add("[redacted", "y") // its marker and the fallback both hold "dacted"
	if got := d.String("[redacted"); strings.Contains(got, "dacted") {
		t.Errorf("String = %q still holds a secret", got)
	}
}

func TestJSON(t *testing.T) {
	var s Set
	s.Add("tok-12345", "${TOKEN}")
	s.Add("<&>'q\"", "[redacted:q]")
	in := []byte(`{"upstream":["srv","--token=tok-12345"],"n":12345678901234567890,"tok-12345":true,"html":"<&>'q\""}`)
	got := s.JSON(in)
	want := `{"${TOKEN}":true,"html":"[redacted:q]","n":12345678901234567890,"upstream":["srv","--token=${TOKEN}"]}`
	if string(got) != want {
		t.Errorf("JSON = %s\nwant   %s", got, want)
	}
	if m, ok := s.Find(got); ok {
		t.Errorf("Find found %s in the redacted document", m)
	}
	if got := s.JSON([]byte(`not json tok-12345`)); string(got) != "not json ${TOKEN}" {
		t.Errorf("JSON of text = %s", got)
	}
	// Find sees a secret as written and as JSON escapes it.
	for _, data := range []string{`tok-12345`, `"\u003c\u0026\u003e'q\""`, `"<&>'q\""`} {
		if _, ok := s.Find([]byte(data)); !ok {
			t.Errorf("Find(%s) found nothing", data)
		}
	}
}

// FuzzRedact: whatever the text and the secrets, no secret is left in what
// String returns; a text without secrets is unchanged; a JSON document
// stays valid JSON and none of its strings holds a secret.
func FuzzRedact(f *testing.F) {
	f.Add("token=s3cret-value", "s3cret-value", "API_KEY", "alpha", `{"a":"alpha s3cret-value"}`)
	f.Add("aaaa", "aaaa", "aaa", "aaaa", `["aaaaaaaa"]`)
	f.Add("[redacted", "dacted", "[redacted", "redacted]", `{"dacted":1}`)
	f.Add("x${K}y", "${K}", "K", "}y", `"${K}"`)
	f.Fuzz(func(t *testing.T, text, secret1, name1, secret2, doc string) {
		var s Set
		s.Add(secret1, "${"+name1+"}")
		s.Add(secret2, "[redacted:"+name1+"]")
		secrets := []string{}
		for _, v := range []string{secret1, secret2} {
			if len(v) >= MinLen {
				secrets = append(secrets, v)
			}
		}
		holds := func(x string) bool {
			for _, v := range secrets {
				if strings.Contains(x, v) {
					return true
				}
			}
			return false
		}
		got := s.String(text)
		if holds(got) {
			t.Fatalf("String(%q) = %q holds a secret of %q", text, got, secrets)
		}
		if !holds(text) && got != text {
			t.Fatalf("String(%q) = %q changed a text without secrets", text, got)
		}
		if !json.Valid([]byte(doc)) {
			return
		}
		out := s.JSON([]byte(doc))
		if !json.Valid(out) {
			t.Fatalf("JSON(%s) = %s is not JSON", doc, out)
		}
		dec := json.NewDecoder(bytes.NewReader(out))
		for {
			tok, err := dec.Token()
			if err != nil {
				break
			}
			if str, ok := tok.(string); ok && holds(str) {
				t.Fatalf("JSON(%s) = %s holds a secret in %q", doc, out, str)
			}
		}
	})
}
