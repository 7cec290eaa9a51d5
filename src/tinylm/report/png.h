#pragma once
// An SVG figure as a PNG image, rasterised by librsvg onto a cairo image surface (Debian's
// librsvg2-dev): `tinylm plot --out FIG.png`. The drawing stays the SVG's (plot.h); this only
// turns its vectors into pixels.
#include <cstddef>
#include <string_view>
#include <vector>

namespace tinylm::report {

// The PNG file's bytes of `svg` drawn at width x height pixels on a white background. Throws
// Error when librsvg cannot read the SVG or cairo cannot encode the image.
std::vector<std::byte> render_svg_png(std::string_view svg, int width, int height);

}  // namespace tinylm::report
