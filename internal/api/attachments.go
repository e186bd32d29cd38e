package api

import (
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strconv"

	"github.com/paddock-dev/paddock/internal/attachment"
	"github.com/paddock-dev/paddock/internal/clip"
	"github.com/paddock-dev/paddock/internal/errdefs"
	"github.com/paddock-dev/paddock/internal/session"
)

// upload stages the request body as a file for a message: at most
// attachment.MaxFile (413 beyond), its type sniffed from its content
// whatever Content-Type says (415 for a type not allowed).
func (s *Server) upload(w http.ResponseWriter, r *http.Request) {
	name := r.URL.Query().Get("name")
	if name == "" {
		s.error(w, r, fmt.Errorf("%w: query parameter name: required (the file's name, as the session will see it)", errdefs.ErrInvalid))
		return
	}
	data, err := readRaw(w, r, attachment.MaxFile)
	if maxErr := (*http.MaxBytesError)(nil); errors.As(err, &maxErr) {
		err = fmt.Errorf("%w: %s: more than %s, the most one attachment holds", errdefs.ErrTooLarge, clip.String(name, 80), clip.Bytes(attachment.MaxFile))
	}
	if err != nil {
		s.error(w, r, err)
		return
	}
	a, err := s.Service.Attachments.Upload(r.Context(), principal(r), r.PathValue("name"), name, data)
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, a)
}

// listAttachments lists a session's attachments.
func (s *Server) listAttachments(w http.ResponseWriter, r *http.Request) {
	list, err := s.Service.Attachments.List(r.Context(), principal(r), r.PathValue("id"))
	if err != nil {
		s.error(w, r, err)
		return
	}
	if list == nil {
		list = []session.Attachment{}
	}
	writeJSON(w, http.StatusOK, list)
}

// attachmentContent serves one of a session's attachments: an image as
// itself, anything else as a download; never sniffed or run by the
// browser.
func (s *Server) attachmentContent(w http.ResponseWriter, r *http.Request) {
	a, data, err := s.Service.Attachments.Open(r.Context(), principal(r), r.PathValue("id"), r.PathValue("attachment"))
	if err != nil {
		s.error(w, r, err)
		return
	}
	serveAttachment(w, a, data)
}

// serveAttachment writes an attachment's content (the web app's
// thumbnails are served here too, the API taking its login cookie).
func serveAttachment(w http.ResponseWriter, a session.Attachment, data []byte) {
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'none'; sandbox")
	h.Set("Cache-Control", "private, max-age=3600")
	h.Set("ETag", `"`+a.Digest+`"`)
	h.Set("Content-Length", strconv.Itoa(len(data)))
	switch a.Kind {
	case session.AttachmentImage:
		h.Set("Content-Type", a.Type)
		h.Set("Content-Disposition", mime.FormatMediaType("inline", map[string]string{"filename": a.Name}))
	case session.AttachmentText:
		h.Set("Content-Type", "text/plain; charset=utf-8")
		h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": a.Name}))
	default:
		h.Set("Content-Type", "application/octet-stream")
		h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": a.Name}))
	}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(data)
}
