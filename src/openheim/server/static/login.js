// The login form keeps the URL's fragment (#s=ID, the session a link names): the form posts to
// /login#s=ID, and the browser carries the fragment over the redirect to the page, which then
// opens that session.

const form = document.querySelector("form");
if (form && location.hash) form.action = `/login${location.hash}`;
