// The "New run" dialog: a run submitted as JSON (kind, subject, and any other fields of the request), a refusal
// shown as the problem the API answered. `createNewRun` is given the console's state and the functions it calls
// back (the row list's render, the run re-read), so this module imports nothing from console.js.
const $ = (id) => document.getElementById(id);

/** Wires the dialog's buttons and form; returns `openNewRun` (the `n` key). */
export function createNewRun({ state, render, touchRun }) {
  function openNewRun() {
    $('nr-refusal').hidden = true;
    $('new-run').showModal();
    $('nr-kind').focus();
  }
  $('new-run-open').addEventListener('click', openNewRun);
  $('nr-cancel').addEventListener('click', () => $('new-run').close());
  $('new-run-form').addEventListener('submit', async (e) => {
    e.preventDefault();
    const refusal = $('nr-refusal');
    refusal.hidden = true;
    let body;
    try {
      body = {
        kind: $('nr-kind').value,
        subject: JSON.parse($('nr-subject').value || '{}'),
        ...JSON.parse($('nr-extra').value || '{}'),
      };
    } catch (err) {
      refusal.textContent = `not JSON: ${err.message}`;
      refusal.hidden = false;
      return;
    }
    const causedBy = $('nr-caused-by').value.trim();
    try {
      const created = await state.conn.call(
        'POST',
        '/runs',
        body,
        causedBy ? { 'x-everdict-caused-by': causedBy } : {},
      );
      state.runs.set(created.run.id, created.run);
      $('new-run').close();
      render();
      touchRun(created.run.id);
    } catch (err) {
      const p = err.problem ?? {};
      refusal.textContent = `refused ${err.status} ${err.code}${p.rule ? ` (rule ${p.rule})` : ''}: ${err.message}`;
      refusal.dataset.status = String(err.status);
      refusal.dataset.code = err.code;
      refusal.hidden = false;
    }
  });
  return openNewRun;
}
