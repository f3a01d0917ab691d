// fairwatch live view: refreshes <main> from the server without a reload.
// Asks for the same URL with fragment=1 every data-refresh seconds; the server answers 304 while its
// snapshot is unchanged (ETag). Folded sections stay as the reader left them, and so does every
// sideways-scrolled table (a group table wider than a phone would jump back to its first column).
(function () {
  "use strict";
  const main = document.getElementById("live");
  const status = document.getElementById("live-status");
  const every = Math.max(1, Number(document.body.dataset.refresh || "5")) * 1000;
  let etag = main.dataset.etag || "";

  function fragmentUrl() {
    const url = new URL(window.location.href);
    url.searchParams.set("fragment", "1");
    return url.toString();
  }

  function say(text, state) {
    status.textContent = text;
    status.className = state;
  }

  async function refresh() {
    try {
      const response = await fetch(fragmentUrl(), {
        headers: etag ? { "If-None-Match": etag } : {},
        cache: "no-store",
      });
      if (response.status === 200) {
        const open = new Set(
          Array.from(main.querySelectorAll("details[open][id]"), (d) => d.id)
        );
        // by each box's data-key (its model, window and table), not its position: a table that comes
        // or goes between two refreshes must not hand its offset to another
        const keyOf = (box, i) => box.dataset.key || "#" + i;
        const scrolled = new Map(
          Array.from(main.querySelectorAll(".scroll"), (box, i) => [keyOf(box, i), box.scrollLeft])
        );
        const html = await response.text();
        main.innerHTML = html;
        for (const id of open) {
          const d = document.getElementById(id);
          if (d) d.open = true;
        }
        main.querySelectorAll(".scroll").forEach((box, i) => {
          const left = scrolled.get(keyOf(box, i));
          if (left) box.scrollLeft = left;
        });
        etag = response.headers.get("ETag") || "";
        main.dataset.etag = etag;
        main.dataset.updates = String(Number(main.dataset.updates || "0") + 1);
        say("live · updated " + new Date().toLocaleTimeString(), "live");
      } else if (response.status === 304) {
        say("live · checked " + new Date().toLocaleTimeString(), "live");
      } else {
        say("service answered " + response.status + ", retrying", "stale");
      }
    } catch (err) {
      say("service unreachable, retrying", "stale");
    }
    window.setTimeout(refresh, every);
  }

  window.setTimeout(refresh, every);
})();
