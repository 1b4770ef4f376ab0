// Every <time data-local> of a page in the reader's own time zone: the server writes the
// moment in UTC (and says so); the browser knows where its reader is. No text of its own:
// the date and time are formatted by Intl in the page's language.
(function () {
  "use strict";
  var language = document.documentElement.lang || undefined;
  var format = new Intl.DateTimeFormat(language, {
    dateStyle: "medium",
    timeStyle: "short",
  });
  document.querySelectorAll("time[data-local]").forEach(function (element) {
    var moment = new Date(element.getAttribute("datetime"));
    if (isNaN(moment)) return;
    element.title = element.textContent; // the UTC text stays one hover away
    element.textContent = format.format(moment);
  });
})();
