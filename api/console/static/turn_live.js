// The turn page's live view (progressive enhancement: the page is whole without it). While the turn runs, its
// event stream (same origin, /console/turns/<id>/events) shows each model call's tokens as they arrive; when the
// turn ends or pauses, the page reloads to show its finished timeline. Text is only ever set as text.
"use strict";

(() => {
  const live = document.getElementById("live");
  if (!live || !window.EventSource) return;
  const text = live.querySelector(".live-text");
  const state = live.querySelector(".live-state");
  const source = new EventSource(`${live.dataset.events}?after=${Number(live.dataset.after) || 0}`);
  let step = null;
  state.textContent = "Following the turn's events…";
  source.onmessage = (message) => {
    const body = JSON.parse(message.data);
    if (body.error) {
      source.close();
      state.textContent = `The turn failed: ${body.error.message}`;
      return;
    }
    const payload = (body.event || {}).payload || {};
    if (payload.event_type === "step_progress" && payload.delta && payload.delta.type === "text") {
      if (step !== payload.step_id) {
        if (step !== null) text.textContent += "\n\n";
        step = payload.step_id;
      }
      text.textContent += payload.delta.text;
    } else if (payload.event_type === "step_start") {
      state.textContent = `Running: ${payload.step_type.replace("_", " ")}`;
    } else if (payload.event_type === "turn_complete" || payload.event_type === "turn_awaiting_input") {
      source.close();
      state.textContent = payload.event_type === "turn_complete" ? "The turn completed." : "The turn waits for input.";
      setTimeout(() => window.location.reload(), 1500);
    }
  };
  source.onerror = () => {
    if (source.readyState === EventSource.CLOSED) state.textContent = "The event stream closed; reload to see more.";
  };
})();
