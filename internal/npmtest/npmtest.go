// Package npmtest serves an npm registry for tests: one package, tiny
// 1.0.0 (its index.js exports 42), over the registry's wire format (a
// packument naming a gzipped tarball by its sha512 integrity), so the
// real npm installs it.
package npmtest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha1"
	"crypto/sha512"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
)

// Index is what tiny's index.js holds.
const Index = "module.exports = 42\n"

// PackageJSON is a project's package.json depending on tiny 1.0.0.
const PackageJSON = `{"name":"app","version":"1.0.0","private":true,"dependencies":{"tiny":"1.0.0"}}`

// Registry serves the registry on a loopback port until the test ends or
// it is closed.
func Registry(t testing.TB) *httptest.Server {
	t.Helper()
	var tgz bytes.Buffer
	gz := gzip.NewWriter(&tgz)
	tw := tar.NewWriter(gz)
	for _, f := range []struct{ name, body string }{
		{"package/package.json", `{"name":"tiny","version":"1.0.0","main":"index.js"}`},
		{"package/index.js", Index},
	} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(f.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	sum512, sum1 := sha512.Sum512(tgz.Bytes()), sha1.Sum(tgz.Bytes())
	srv := httptest.NewUnstartedServer(nil)
	url := "http://" + srv.Listener.Addr().String()
	srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/tiny":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"name":"tiny","dist-tags":{"latest":"1.0.0"},"versions":{"1.0.0":{"name":"tiny","version":"1.0.0",`+
				`"dist":{"tarball":"%s/tiny/-/tiny-1.0.0.tgz","integrity":"sha512-%s","shasum":"%x"}}}}`,
				url, base64.StdEncoding.EncodeToString(sum512[:]), sum1)
		case "/tiny/-/tiny-1.0.0.tgz":
			_, _ = w.Write(tgz.Bytes())
		default:
			http.NotFound(w, r)
		}
	})
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}
