// The keys of an item page (docs/web.md, "Keys"). The page names each answer's keys in
// its data-keys attribute; this file knows only the page's own keys: Enter (save, then
// the next item), Backspace (the last label), u (undo), m (mask), v (the masked text shown
// for 5 seconds), . (to the masked text), ? and Esc (this list); and it makes a dialogue's error category required once a turn is
// picked. No text of its own: every word on the page comes from the message catalogue.
(function () {
  "use strict";
  var form = document.getElementById("label-form");
  if (!form) return;
  var help = document.getElementById("keys-help");
  var typing = "input[type=text], input[type=password], input[type=number], textarea, select";

  // the list of keys is a dialog: opened, it takes the focus (a screen reader reads it);
  // closed, the focus goes back where it was
  var before = null;
  function showHelp(show) {
    if (show === !help.hidden) return;
    help.hidden = !show;
    if (show) {
      before = document.activeElement;
      help.focus();
    } else if (before && before.focus) {
      before.focus();
    }
  }

  function send(id) {
    var other = document.getElementById(id);
    if (other) other.requestSubmit();
  }

  // the key as typed on a Latin layout: with a Korean (Hangul) layout on, the "a" key
  // types "ㅁ", and the physical key ("KeyA") is what the annotator meant
  function keyOf(event) {
    if (/^[a-z0-9]$/i.test(event.key)) return event.key.toLowerCase();
    var code = /^(?:Key|Digit|Numpad)([A-Z0-9])$/.exec(event.code || "");
    return code ? code[1].toLowerCase() : event.key;
  }

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    var target = event.target;
    if (target.matches && target.matches(typing)) return;
    if (event.key === "Escape") return showHelp(false);
    if (event.key === "?") {
      showHelp(help.hidden);
    } else if (event.key === "Enter") {
      if (target.matches && target.matches("button, a, summary")) return; // its own action
      form.requestSubmit();
    } else {
      var key = keyOf(event);
      if (event.key === "Backspace") {
        var previous = document.getElementById("previous");
        if (!previous) return;
        window.location.href = previous.href; // the last label's item, its answer shown
      } else if (key === "u") {
        send("undo-form");
      } else if (key === "m") {
        send("mask-form");
      } else if (key === "v") {
        reveal();
      } else if (event.key === ".") {
        // the first masked text takes the focus, which shows it (CSS :focus)
        var masked = document.querySelector(".masked");
        if (!masked) return;
        masked.focus();
      } else {
        var choice = form.querySelector('input[data-keys~="' + CSS.escape(key) + '"]');
        if (!choice) return;
        choice.checked = true;
        choice.focus(); // the focus ring shows what the key chose, and scrolls it into view
        needCategory();
      }
    }
    event.preventDefault();
  });

  // every masked text of the page shown for 5 seconds, without a reload (the item's
  // clock goes on); a second v starts the 5 seconds again
  var hide = null;
  function reveal() {
    var masked = document.querySelectorAll(".masked");
    if (!masked.length) return;
    masked.forEach(function (element) {
      element.classList.add("revealed");
    });
    clearTimeout(hide);
    hide = setTimeout(function () {
      masked.forEach(function (element) {
        element.classList.remove("revealed");
      });
    }, 5000);
  }

  // a dialogue's error category is required once a system turn is picked as out of
  // bounds (not with "every system turn is in bounds"): the browser asks for it in place
  function needCategory() {
    var picked = form.querySelector("input[name=first_oob]:checked");
    var need = !!picked && picked.value !== "none";
    form.querySelectorAll("input[name=category]").forEach(function (input) {
      input.required = need;
    });
  }
  form.addEventListener("change", needCategory);
  needCategory();

  document.getElementById("show-keys").addEventListener("click", function () {
    showHelp(help.hidden);
  });

  var timer = document.getElementById("timer");
  var start = Date.now();
  setInterval(function () {
    timer.textContent = String(Math.floor((Date.now() - start) / 1000));
  }, 1000);
})();
