/* Checks a screenshot of pbd view: png_check FILE [PANES]. In each pane (the picture split
 * into PANES columns) the middle tenth must be drawn in the first body's colour (a red
 * whose red channel leads green by more than 40), and a band in the top right where nothing
 * is drawn must be exactly the background (237, 240, 245). Prints what it measured; exits 1
 * when a check fails. */
#include <stdio.h>
#include <stdlib.h>

#include <stb/stb_image.h>

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: png_check FILE [PANES]\n");
        return 2;
    }
    int panes = argc > 2 ? atoi(argv[2]) : 1, w, h, n;
    unsigned char *px = stbi_load(argv[1], &w, &h, &n, 3);
    if (!px || panes < 1) {
        fprintf(stderr, "%s: not a PNG\n", argv[1]);
        return 1;
    }
    int rc = 0;
    int pw = w / panes;
    for (int p = 0; p < panes; ++p) {
        long body = 0, total = 0, empty = 0, empty_total = 0;
        for (int y = h * 45 / 100; y < h * 55 / 100; ++y)
            for (int x = p * pw + pw * 45 / 100; x < p * pw + pw * 55 / 100; ++x) {
                const unsigned char *c = px + 3 * ((size_t)y * w + x);
                body += c[0] > c[1] + 40;
                total++;
            }
        for (int y = h * 12 / 100; y < h * 20 / 100; ++y)
            for (int x = p * pw + pw * 80 / 100; x < (p + 1) * pw; ++x) {
                const unsigned char *c = px + 3 * ((size_t)y * w + x);
                empty += c[0] == 237 && c[1] == 240 && c[2] == 245;
                empty_total++;
            }
        printf("pane %d of %s (%d x %d): %ld of %ld middle pixels in the body's colour, %ld of "
               "%ld top-right pixels the background\n",
               p, argv[1], w, h, body, total, empty, empty_total);
        if (body < total * 9 / 10 || empty != empty_total || total == 0 || empty_total == 0)
            rc = 1;
    }
    stbi_image_free(px);
    return rc;
}
