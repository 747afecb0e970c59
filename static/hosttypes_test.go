package static

import "mime"

// hostTypes stands for a host whose MIME table (/etc/mime.types, read by
// mime.TypeByExtension where no shared-mime-info database is installed)
// maps the assets' extensions to other types. Package variables are
// initialised before any init function, so the table is in place before
// the assets are read (static.go's init).
var hostTypes = func() bool {
	for ext, typ := range map[string]string{".js": "text/plain", ".css": "application/octet-stream"} {
		if err := mime.AddExtensionType(ext, typ); err != nil {
			panic(err)
		}
	}
	return true
}()
