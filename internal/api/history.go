package api

import "net/http"

// history lists the steps of a session's working copy, oldest first: the
// files that differ from the base after each call that changed one.
func (s *Server) history(w http.ResponseWriter, r *http.Request) {
	list, err := s.Service.Review().Steps(r.Context(), principal(r), r.PathValue("id"))
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, nonNil(list))
}
