#!/bin/sh
# The dashboard's PNG icons, made from Sources/AlertdAPI/Dashboard/icon.svg with rsvg-convert
# (Debian's librsvg2-bin). The PNGs are committed; run this after changing icon.svg, and the
# same librsvg gives the same bytes.
#
#   icon-192.png, icon-512.png   the icon as it is (rounded square, transparent corners)
#   icon-maskable-512.png        full bleed: the background fills the square and the glyph sits
#                                inside the safe zone (the central circle, 80 % of the width),
#                                for launchers that cut icons into their own shape
#   apple-touch-icon.png         180 × 180, full bleed too: iOS rounds it itself and would show
#                                transparent corners black
set -eu
cd "$(dirname "$0")/../Sources/AlertdAPI/Dashboard"
command -v rsvg-convert >/dev/null || { echo "dashboard-icons.sh needs rsvg-convert: apt-get install librsvg2-bin" >&2; exit 1; }

rsvg-convert -w 192 -h 192 icon.svg -o icon-192.png
rsvg-convert -w 512 -h 512 icon.svg -o icon-512.png

full_bleed=$(mktemp --suffix=.svg)
trap 'rm -f "$full_bleed"' EXIT
{
    echo '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32" width="32" height="32">'
    # The background colour of icon.svg's first rect, over the whole square.
    sed -n '0,/<rect/s/.*<rect[^>]* fill="\([^"]*\)".*/  <rect width="32" height="32" fill="\1"\/>/p' icon.svg
    # The glyph (every element after the background), centred and scaled into the safe zone:
    # its box is x 6–26, y 8–27; at 0.9 its corners stay 12.4 from the centre (safe: 12.8).
    echo '  <g transform="translate(16 16) scale(0.9) translate(-16 -17.5)">'
    sed -n '/<rect/p' icon.svg | tail -n +2
    echo '  </g>'
    echo '</svg>'
} >"$full_bleed"
rsvg-convert -w 512 -h 512 "$full_bleed" -o icon-maskable-512.png
rsvg-convert -w 180 -h 180 "$full_bleed" -o apple-touch-icon.png
