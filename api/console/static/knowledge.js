// The knowledge page's improvements; without this file the plain file input and the page's reload do the same.
// - A file dropped on the drop zone fills the upload form's file input and sends the form.
// - While the store ingests, its progress is read every second (/console/knowledge/{id}/progress, JSON) and the
//   bar, the counts and each file's status follow; polling stops once nothing is in progress.
"use strict";

const POLL_MS = 1000;

for (const zone of document.querySelectorAll(".drop-zone[data-drop-target]")) {
  const input = document.getElementById(zone.dataset.dropTarget);
  zone.addEventListener("dragover", (event) => {
    event.preventDefault();
    zone.classList.add("over");
  });
  zone.addEventListener("dragleave", () => zone.classList.remove("over"));
  zone.addEventListener("drop", (event) => {
    event.preventDefault();
    zone.classList.remove("over");
    if (!event.dataTransfer || event.dataTransfer.files.length === 0) return;
    input.files = event.dataTransfer.files;
    zone.textContent = `Uploading ${input.files[0].name}…`;
    input.form.requestSubmit();
  });
}

function show(section, progress) {
  const counts = progress.file_counts;
  section.dataset.status = progress.status;
  const status = section.querySelector('[data-field="status"]');
  status.textContent = progress.status.replace("_", " ");
  status.className = `status status-${progress.status}`;
  section.querySelector('[data-field="counts"]').textContent = `${counts.completed} of ${counts.total} files ingested`;
  const bar = section.querySelector("progress");
  bar.max = Math.max(counts.total, 1);
  bar.value = counts.completed + counts.failed + counts.cancelled;
  for (const file of progress.files) {
    const row = document.querySelector(`tr[data-file="${CSS.escape(file.id)}"]`);
    if (!row) continue;
    const cell = row.querySelector('[data-field="file-status"]');
    cell.textContent = file.status.replace("_", " ");
    cell.className = `status status-${file.status}`;
    if (file.last_error && !row.querySelector('[data-field="file-error"]')) {
      const error = document.createElement("span");
      error.className = "bad";
      error.dataset.field = "file-error";
      error.textContent = ` ${file.last_error}`;
      cell.after(error);
    }
  }
}

async function poll(section) {
  try {
    const answer = await fetch(section.dataset.progressUrl, { credentials: "same-origin", headers: { accept: "application/json" } });
    if (answer.ok) show(section, await answer.json());
  } catch (_) {
    // A missed poll is retried at the next tick.
  }
  const busy = section.dataset.status === "in_progress" || document.querySelector(".status-in_progress");
  if (busy) setTimeout(() => poll(section), POLL_MS);
}

for (const section of document.querySelectorAll("[data-progress-url]")) {
  if (section.dataset.status === "in_progress" || document.querySelector(".status-in_progress")) {
    setTimeout(() => poll(section), POLL_MS);
  }
}
