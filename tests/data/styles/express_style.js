'use strict';
// A response in the shape of Express 4's code: methods assigned to an object, destructured requires.

var { deprecate, format: formatMessage } = require('./util');
const [encodeUrl, escapeHtml] = [require('encodeurl'), require('escape-html')];

var res = Object.create(http.ServerResponse.prototype);

module.exports = res;

/**
 * Set status `code`.
 */
res.status = function status(code) {
  this.statusCode = code;
  return this;
};

res.links = (links) => {
  var link = this.get('Link') || '';
  return this.set('Link', link);
};

function Router(options) {
  this.params = {};
  this.handle = function handle(req, res, next) {
    next();
  };
}

Router.prototype.use = function use(fn) {
  return this;
};

res.locals[name] = function () {};
res.charset = 'utf-8';
