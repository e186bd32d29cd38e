// Package attachment decides what a file given with a message is: its
// kind by its sniffed content (never its name), the name it is shown and
// placed under, the limits it must keep, and the text the model reads of a
// text file. Images, PDF and UTF-8 text are allowed; archives only where
// the server allows them; everything else is refused with the reason.
package attachment

import (
	"bytes"
	"fmt"
	"image"
	_ "image/gif"  // image.DecodeConfig of GIF
	_ "image/jpeg" // and JPEG
	_ "image/png"  // and PNG
	"path"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/gabriel-vasile/mimetype"
	"github.com/paddock-dev/paddock/internal/clip"
	"github.com/paddock-dev/paddock/internal/session"
	_ "golang.org/x/image/webp" // and WebP
)

// Limits. A file beyond MaxFile is refused as it arrives (413); an image
// beyond MaxImage (the smallest any provider takes) or larger than
// MaxPixels on a side is refused; a session's bound attachments hold
// MaxSession at most, a user's staged ones (uploaded, not yet sent) in a
// project MaxStaged, and a staged attachment no message named in
// StagedFor is collected.
const (
	MaxFile    = 10 << 20
	MaxImage   = 5 << 20
	MaxPixels  = 8000
	MaxSession = 50 << 20
	MaxStaged  = 100 << 20
	StagedFor  = 24 * time.Hour
	// MaxInline is the most of a text file given to the model inline;
	// the rest it reads in the working copy.
	MaxInline = 64 << 10
	// MaxName bounds a file's name, in bytes.
	MaxName = 128
)

// images are the image types given to models as image content.
var images = []string{"image/png", "image/jpeg", "image/gif", "image/webp"}

// Archives are the types refused unless the server allows them
// (PADDOCK_ATTACHMENT_TYPES): placed in the working copy only.
var Archives = []string{"application/zip", "application/gzip", "application/x-tar", "application/x-7z-compressed",
	"application/x-xz", "application/x-bzip2", "application/x-rar-compressed", "application/zstd"}

// Sniffed is what a file's content says it is.
type Sniffed struct {
	Kind session.AttachmentKind
	Type string
}

// Sniff decides a file's kind from its content: an image must decode as
// one of the image types (and keep the image limits), a PDF must say so,
// text must be valid UTF-8 without NUL or other control bytes throughout
// (not only where the sniffer looked); anything else is refused unless
// its sniffed type (or one it derives from) is in allow.
func Sniff(data []byte, allow []string) (Sniffed, error) {
	m := mimetype.Detect(data)
	typ, _, _ := strings.Cut(m.String(), ";")
	switch {
	case len(data) == 0:
		return Sniffed{}, fmt.Errorf("the file is empty")
	case slices.Contains(images, typ):
		cfg, format, err := image.DecodeConfig(bytes.NewReader(data))
		if err != nil || "image/"+format != typ {
			return Sniffed{}, fmt.Errorf("the file starts as %s but does not decode as one", typ)
		}
		if len(data) > MaxImage {
			return Sniffed{}, fmt.Errorf("%s image of %s: at most %s (the most every provider takes)", typ, clip.Bytes(int64(len(data))), clip.Bytes(MaxImage))
		}
		if cfg.Width > MaxPixels || cfg.Height > MaxPixels || cfg.Width == 0 || cfg.Height == 0 {
			return Sniffed{}, fmt.Errorf("%s image of %d×%d pixels: at most %d on a side", typ, cfg.Width, cfg.Height, MaxPixels)
		}
		return Sniffed{session.AttachmentImage, typ}, nil
	case typ == "application/pdf" && !isText(data):
		// A "PDF" that is text throughout is text: its secrets are
		// redacted as any text's (a real one holds binary).
		return Sniffed{session.AttachmentPDF, typ}, nil
	case isText(data):
		if strings.HasPrefix(typ, "image/") || !m.Is("text/plain") && !strings.HasPrefix(typ, "text/") && !strings.HasPrefix(typ, "application/") {
			typ = "text/plain" // SVG and the like are text here, never shown as images
		}
		return Sniffed{session.AttachmentText, typ}, nil
	}
	for x := m; x != nil; x = x.Parent() {
		if t, _, _ := strings.Cut(x.String(), ";"); slices.Contains(allow, t) {
			return Sniffed{session.AttachmentFile, typ}, nil
		}
	}
	if strings.HasPrefix(typ, "text/") {
		return Sniffed{}, fmt.Errorf("its content is text but not UTF-8 (or holds control bytes): convert it to UTF-8")
	}
	hint := ""
	if slices.Contains(Archives, typ) {
		hint = "; archives are refused unless the server allows them (PADDOCK_ATTACHMENT_TYPES)"
	}
	return Sniffed{}, fmt.Errorf("its content is %s, not an allowed type (images: PNG, JPEG, GIF, WebP; PDF; UTF-8 text%s)", typ, hint)
}

// isText says whether data is UTF-8 text: valid throughout, no NUL, no
// control bytes but tab, newlines, form feed and escape.
func isText(data []byte) bool {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	if !utf8.Valid(data) {
		return false
	}
	for _, b := range data {
		if b < 0x20 && b != '\t' && b != '\n' && b != '\r' && b != '\f' && b != 0x1b {
			return false
		}
	}
	return true
}

// Name is the name a file is shown and placed under: the last element of
// what the client said, every character that is not a printable letter,
// digit or one of "._-+@ ()" replaced by "_", at most MaxName bytes
// (keeping the extension), never empty, "." or "..", and never hidden.
func Name(raw string) string {
	raw = strings.ReplaceAll(raw, "\\", "/")
	base := path.Base(strings.TrimRight(raw, "/"))
	var b strings.Builder
	for _, r := range base {
		switch {
		case r == utf8.RuneError:
			b.WriteByte('_')
		case unicode.IsLetter(r), unicode.IsDigit(r), strings.ContainsRune("._-+@ ()", r):
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	name := b.String()
	for trimmed := ""; trimmed != name; {
		trimmed = name
		name = strings.TrimLeft(strings.TrimSpace(name), ".")
	}
	if name == "" {
		name = "attachment"
	}
	if len(name) > MaxName {
		ext := path.Ext(name)
		if len(ext) > 16 {
			ext = ""
		}
		stem := strings.ToValidUTF8(name[:MaxName-len(ext)], "")
		name = stem + ext
	}
	return name
}

// Unique is name made distinct from taken (which it joins): "a.png",
// then "a-2.png", "a-3.png", ..., within MaxName.
func Unique(name string, taken map[string]bool) string {
	out := name
	ext := path.Ext(name)
	stem := strings.TrimSuffix(name, ext)
	for i := 2; taken[out]; i++ {
		suffix := fmt.Sprintf("-%d%s", i, ext)
		out = strings.ToValidUTF8(stem[:min(len(stem), MaxName-len(suffix))], "") + suffix
	}
	taken[out] = true
	return out
}

// Inline is what the model reads of a text attachment: a header naming
// it and where it is, then its text (the first MaxInline bytes of it,
// the rest left to the working copy) fenced by its digest.
func Inline(r session.AttachmentRef, text []byte) string {
	head := fmt.Sprintf("Attached file %s (%s, %s), also at %s in the working copy", r.Name, r.Type, clip.Bytes(r.Size), r.Path())
	if len(text) > MaxInline {
		text = []byte(strings.ToValidUTF8(string(text[:MaxInline]), ""))
		head += fmt.Sprintf("; the first %s of it follow, read the rest there", clip.Bytes(int64(len(text))))
	}
	// The fence names the file's digest, which its text cannot hold: no
	// line of the file can close it.
	fence := "attachment sha256:" + r.Digest
	return head + ":\n<" + fence + ">\n" + string(text) + "\n</" + fence + ">"
}

// Note is what the model reads of an attachment it is not given as
// content (a file kind, or a type its model does not take): where it is.
func Note(r session.AttachmentRef, why string) string {
	s := fmt.Sprintf("Attached file %s (%s, %s) is at %s in the working copy", r.Name, r.Type, clip.Bytes(r.Size), r.Path())
	if why != "" {
		s += " (" + why + ")"
	}
	return s + "."
}
