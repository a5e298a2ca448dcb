// Progressive enhancement only: every page works without this file.
// - A form being sent disables its buttons, so a double click sends one answer, not two.
// - Ages count up while the page is open.
"use strict";

document.addEventListener("submit", (event) => {
  const form = event.target;
  // The button that sent the form carries its action (Approve / Reject): keep its value before disabling it.
  const sender = event.submitter;
  if (sender && sender.name) {
    const kept = document.createElement("input");
    kept.type = "hidden";
    kept.name = sender.name;
    kept.value = sender.value;
    form.appendChild(kept);
  }
  for (const button of form.querySelectorAll("button")) button.disabled = true;
});

function ageText(seconds) {
  for (const [unit, size] of [["d", 86400], ["h", 3600], ["min", 60]]) {
    if (seconds >= size) return `${Math.floor(seconds / size)} ${unit}`;
  }
  return `${seconds} s`;
}

setInterval(() => {
  const now = Date.now() / 1000;
  for (const age of document.querySelectorAll(".age[data-since]")) {
    age.textContent = `waiting ${ageText(Math.max(0, Math.floor(now - Number(age.dataset.since))))}`;
  }
}, 10000);
