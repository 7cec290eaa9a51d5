#include "tinylm/report/png.h"

#include <cairo.h>
#include <librsvg/rsvg.h>

#include <memory>
#include <string>

#include "tinylm/core/error.h"

namespace tinylm::report {

namespace {

struct SurfaceFree {
  void operator()(cairo_surface_t* s) const { cairo_surface_destroy(s); }
};
struct ContextFree {
  void operator()(cairo_t* c) const { cairo_destroy(c); }
};
struct HandleFree {
  void operator()(RsvgHandle* h) const { g_object_unref(h); }
};

// librsvg's GError as one line, freed.
std::string take_message(GError* error) {
  std::string m = error != nullptr ? error->message : "unknown error";
  if (error != nullptr) g_error_free(error);
  return m;
}

cairo_status_t append(void* closure, const unsigned char* data, unsigned int length) {
  auto* out = static_cast<std::vector<std::byte>*>(closure);
  const auto* bytes = reinterpret_cast<const std::byte*>(data);
  out->insert(out->end(), bytes, bytes + length);
  return CAIRO_STATUS_SUCCESS;
}

}  // namespace

std::vector<std::byte> render_svg_png(std::string_view svg, int width, int height) {
  check(width > 0 && height > 0, "PNG size must be positive, got ", width, " x ", height);
  GError* error = nullptr;
  const std::unique_ptr<RsvgHandle, HandleFree> handle(
      rsvg_handle_new_from_data(reinterpret_cast<const guint8*>(svg.data()), svg.size(), &error));
  if (!handle) fail("SVG for the PNG: ", take_message(error));
  const std::unique_ptr<cairo_surface_t, SurfaceFree> surface(
      cairo_image_surface_create(CAIRO_FORMAT_ARGB32, width, height));
  check(cairo_surface_status(surface.get()) == CAIRO_STATUS_SUCCESS, "PNG: cannot make a ", width,
        " x ", height, " image");
  const std::unique_ptr<cairo_t, ContextFree> cr(cairo_create(surface.get()));
  // A figure without a background of its own is drawn on white, as a browser shows it.
  cairo_set_source_rgb(cr.get(), 1.0, 1.0, 1.0);
  cairo_paint(cr.get());
  const RsvgRectangle viewport{0.0, 0.0, static_cast<double>(width), static_cast<double>(height)};
  if (!rsvg_handle_render_document(handle.get(), cr.get(), &viewport, &error))
    fail("SVG for the PNG: ", take_message(error));
  cairo_surface_flush(surface.get());
  std::vector<std::byte> png;
  const cairo_status_t status = cairo_surface_write_to_png_stream(surface.get(), append, &png);
  check(status == CAIRO_STATUS_SUCCESS, "PNG: ", cairo_status_to_string(status));
  return png;
}

}  // namespace tinylm::report
