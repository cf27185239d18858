package config

import (
	"net/url"
	"regexp"
	"strings"
)

// envName is what an auth.clientSecret naming an environment variable looks
// like (bare or as ${NAME}).
var envName = regexp.MustCompile(`^(\$\{)?[A-Za-z_][A-Za-z0-9_]*(\})?$`)

// SecretRef reports how an auth.clientSecret value is resolved: the
// environment variable it names (name != ""), or the shell command after its
// "!" (command != ""). Anything else is not a valid reference.
func SecretRef(v string) (name, command string, ok bool) {
	if c, isCmd := strings.CutPrefix(v, "!"); isCmd {
		return "", c, strings.TrimSpace(c) != ""
	}
	if !envName.MatchString(v) {
		return "", "", false
	}
	braced := strings.HasPrefix(v, "${")
	if braced != strings.HasSuffix(v, "}") {
		return "", "", false
	}
	return strings.TrimSuffix(strings.TrimPrefix(v, "${"), "}"), "", true
}

// oauthFlow reads the OAuth-flow fields of an "auth" object into auth.
func (c *entryCheck) oauthFlow(a jval, auth *Auth) {
	str := func(key string, v jval, ok bool) string {
		if !ok || string(v.raw()) == "null" {
			return ""
		}
		s, isStr := v.str()
		if !isStr {
			c.fail("auth."+key, v.off, "must be a string, got %s", v.kind())
			return ""
		}
		return s
	}
	boolean := func(key string, v jval, ok bool, def bool) bool {
		if !ok {
			return def
		}
		b, isBool := v.boolean()
		if !isBool {
			c.fail("auth."+key, v.off, "must be true or false, got %s", v.kind())
			return def
		}
		return b
	}
	g, gok := a.get("grant")
	auth.Grant = str("grant", g, gok)
	id, idok := a.get("clientId")
	auth.ClientID = str("clientId", id, idok)
	sec, secok := a.get("clientSecret")
	auth.ClientSecret = str("clientSecret", sec, secok)
	cimd, cimdok := a.get("clientMetadataUrl")
	auth.ClientMetadataURL = str("clientMetadataUrl", cimd, cimdok)
	dcr, dcrok := a.get("dynamicRegistration")
	auth.DynamicRegistration = boolean("dynamicRegistration", dcr, dcrok, true)
	redir, redirok := a.get("redirectUri")
	auth.RedirectURI = str("redirectUri", redir, redirok)
	off, offok := a.get("offlineAccess")
	auth.OfflineAccess = boolean("offlineAccess", off, offok, false)

	switch auth.Grant {
	case "":
		for _, f := range []struct {
			key string
			v   jval
			set bool
		}{{"clientId", id, auth.ClientID != ""}, {"clientSecret", sec, auth.ClientSecret != ""}, {"clientMetadataUrl", cimd, auth.ClientMetadataURL != ""},
			{"dynamicRegistration", dcr, dcrok}, {"redirectUri", redir, auth.RedirectURI != ""}, {"offlineAccess", off, offok}} {
			if f.set {
				c.fail("auth."+f.key, f.v.off, `needs "grant" ("%s" or "%s")`, GrantAuthorizationCode, GrantClientCredentials)
			}
		}
		auth.DynamicRegistration = false
		return
	case GrantAuthorizationCode, GrantClientCredentials:
	default:
		c.fail("auth.grant", g.off, `unknown grant %q (want "%s" or "%s")`, auth.Grant, GrantAuthorizationCode, GrantClientCredentials)
		return
	}
	if auth.ClientSecret != "" {
		if _, _, ok := SecretRef(auth.ClientSecret); !ok {
			c.fail("auth.clientSecret", sec.off, "must name an environment variable (NAME or ${NAME}) or be a !command; a secret written into the config is not accepted")
		}
		if auth.ClientID == "" && auth.Grant == GrantAuthorizationCode {
			c.fail("auth.clientSecret", sec.off, `needs "clientId" (the pre-registered client the secret belongs to)`)
		}
	}
	if auth.RedirectURI != "" {
		if u, err := url.Parse(auth.RedirectURI); err != nil || !u.IsAbs() || (u.Scheme == "http" || u.Scheme == "https") && u.Host == "" {
			c.fail("auth.redirectUri", redir.off, "must be an absolute URL, got %q", auth.RedirectURI)
		}
	}
	if auth.Grant == GrantClientCredentials {
		if auth.ClientID == "" {
			c.fail("auth.clientId", a.off, "required for grant %q", GrantClientCredentials)
		}
		if auth.ClientSecret == "" {
			c.fail("auth.clientSecret", a.off, "required for grant %q (go-sdk's client-credentials handler authenticates with a client secret)", GrantClientCredentials)
		}
		for _, f := range []struct {
			key string
			v   jval
			set bool
		}{{"clientMetadataUrl", cimd, auth.ClientMetadataURL != ""}, {"dynamicRegistration", dcr, dcrok}, {"redirectUri", redir, auth.RedirectURI != ""}, {"offlineAccess", off, offok}} {
			if f.set {
				c.warn("auth."+f.key, f.v.off, "ignored with grant %q", GrantClientCredentials)
			}
		}
		auth.DynamicRegistration, auth.ClientMetadataURL, auth.RedirectURI, auth.OfflineAccess = false, "", "", false
		return
	}
	if auth.ClientMetadataURL != "" {
		if u, err := url.Parse(auth.ClientMetadataURL); err != nil || u.Scheme != "https" || u.Host == "" || strings.Trim(u.Path, "/") == "" {
			c.fail("auth.clientMetadataUrl", cimd.off, "must be an https URL with a path (the client id metadata document), got %q", auth.ClientMetadataURL)
		}
	}
	if auth.ClientID == "" && auth.ClientMetadataURL == "" && !auth.DynamicRegistration {
		c.fail("auth.dynamicRegistration", dcr.off, `false leaves no way to register the client: set "clientId" or "clientMetadataUrl"`)
	}
}
